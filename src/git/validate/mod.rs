//! Paths git refuses to check out (design §3.18 "Paths"): what a worker
//! produced is checked against them before anything of it is merged or
//! written, and so is every path a snapshot of the source records.
//!
//! The rules are git's with `core.protectNTFS` and `core.protectHFS` on,
//! whatever the platform: `gix-validate`'s component check (an empty, `.`
//! or `..` name; a name holding `/`; `.git` in any letter case and its NTFS
//! and HFS+ aliases such as `git~1`, `.git.`, `.git ` and `.g\u{200c}it`; a
//! symlinked `.gitmodules`), with Windows' own name rules off (they refuse
//! names such as `a:b` that git takes on Linux); plus what git checks
//! beyond it: a `.git` alias after a backslash (NTFS reads `\` as a folder
//! separator: `a\.git`), and a symlinked `.gitattributes`, `.gitignore` or
//! `.mailmap` (or an alias of one), which git's fsck flags.
//!
//! Owns: the rule (`name`, `path`), finding what breaks it in a tree where
//! it differs from its base and the bound on what a tree may bring (the
//! walk: `walk.rs`, re-exported here), the words for each reason, and the
//! error for a working tree that holds such paths (`in_working_tree`); its
//! errors are `ValidateError` (worded in `ops::explain`).
//! Never: reads or writes a working tree; a leaf module (only `paths` below
//! it), so that every command that lands work can call it.

use std::path::{Path, PathBuf};

use gix::bstr::{BStr, BString, ByteSlice};
use gix::objs::tree::EntryKind;
use gix::ObjectId;
use gix_validate::path::component;

/// Why a tree could not be checked, or a working tree is refused.
#[derive(Debug, thiserror::Error)]
pub enum ValidateError {
    /// A tree object the walk could not read.
    #[error("cannot read the tree {id}")]
    Tree {
        id: ObjectId,
        #[source]
        source: gix::Error,
    },
    /// A working tree (`root`) holding paths git refuses to add or check
    /// out (design §3.18): the first few are named, and how many more.
    #[error(
        "the working tree {} holds paths git refuses to add or check out: {}",
        root.display(),
        list(found)
    )]
    InWorkingTree { root: PathBuf, found: Vec<Invalid> },
}

type Result<T, E = ValidateError> = std::result::Result<T, E>;

mod walk;
pub use walk::{gitlinks, max_changed, too_many, tree, MAX_CHANGED, TOO_MANY};

/// An apply task whose proposal holds such a path (design §6.2 `reason`).
pub const REASON: &str = "invalid_path";

/// How many offending paths are named at most (the first ones found).
pub const NAMED: usize = 20;

/// How many entries below an offending folder are visited to name the
/// files in it (past that, the folder itself is named).
pub(super) const BELOW_BUDGET: usize = 1000;

/// git's checks with `core.protectNTFS` and `core.protectHFS` on, Windows'
/// own name rules off.
const OPTIONS: component::Options = component::Options {
    protect_windows: false,
    protect_hfs: true,
    protect_ntfs: true,
};

/// The longest file name (in bytes) a Linux filesystem takes, and so the
/// longest component accepted (design §3.18, limits).
pub const NAME_MAX: usize = 255;

/// The longest symlink target (in bytes) accepted: `PATH_MAX` less its NUL.
pub const TARGET_MAX: usize = 4095;

/// Why the symlink target `target` is refused, if it is: empty, holding a
/// NUL, or longer than [`TARGET_MAX`] (none can be made on disk: such a
/// target only comes as bytes from another machine).
pub fn target(target: &[u8]) -> Option<&'static str> {
    if target.is_empty() {
        Some("empty symlink target")
    } else if target.contains(&0) {
        Some("symlink target holding NUL")
    } else if target.len() > TARGET_MAX {
        Some("symlink target longer than 4095 bytes")
    } else {
        None
    }
}

/// One path git would refuse, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// Relative to the tree's root, `/`-separated, as the tree names it.
    pub path: BString,
    /// Why, in words (`conflicts[].reason` of an apply document).
    pub why: &'static str,
}

/// The files git reads from the tree, whose symlinks git's fsck flags
/// (besides `.gitmodules`, which gix-validate checks): each with the NTFS
/// short-name prefix git computes for it.
const READ_FROM_TREE: [(&str, &str, &str); 3] = [
    ("gitattributes", "gi7d29", "symlinked .gitattributes"),
    ("gitignore", "gi250a", "symlinked .gitignore"),
    ("mailmap", "maba30", "symlinked .mailmap"),
];

/// Why git refuses the tree entry `name` of kind `kind`, if it does.
pub fn name(name: &BStr, kind: EntryKind) -> Option<&'static str> {
    if name.len() > NAME_MAX {
        return Some("name longer than 255 bytes");
    }
    let mode = (kind == EntryKind::Link).then_some(component::Mode::Symlink);
    if let Err(e) = component(name, mode, OPTIONS) {
        return Some(words(&e));
    }
    // NTFS reads a backslash as a folder separator: each part of the name
    // is checked for `.git` (and a symlinked `.gitmodules`) as git does.
    if name.contains(&b'\\') {
        for part in name.split(|&b| b == b'\\').filter(|p| !p.is_empty()) {
            if let Err(e @ (component::Error::DotGitDir | component::Error::SymlinkedGitModules)) =
                component(part.as_bstr(), mode, OPTIONS)
            {
                return Some(words(&e));
            }
        }
    }
    if mode.is_some() {
        for (file, short, why) in READ_FROM_TREE {
            if is_hfs_alias(name, file) || is_ntfs_alias(name, file, short) {
                return Some(why);
            }
        }
    }
    None
}

/// Why git refuses the `/`-separated `path` whose last component is of
/// kind `kind` (every other component is a folder), if it does.
pub fn path(path: &BStr, kind: EntryKind) -> Option<&'static str> {
    let mut parts = path.split(|&b| b == b'/').peekable();
    while let Some(part) = parts.next() {
        let k = if parts.peek().is_none() {
            kind
        } else {
            EntryKind::Tree
        };
        if let Some(why) = name(part.as_bstr(), k) {
            return Some(why);
        }
    }
    None
}

fn words(e: &component::Error) -> &'static str {
    match e {
        component::Error::Empty => "empty name",
        component::Error::Relative => "relative name (. or ..)",
        component::Error::PathSeparator => "name holding a slash",
        component::Error::DotGitDir => ".git or an alias of it",
        component::Error::SymlinkedGitModules => "symlinked .gitmodules",
        _ => "not a valid name",
    }
}

/// The paths as `path (why)`, the first few, for a message.
pub fn list(found: &[Invalid]) -> String {
    const SHOWN: usize = 5;
    let mut items: Vec<String> = found
        .iter()
        .take(SHOWN)
        .map(|f| format!("{} ({})", crate::sys::paths::quote(f.path.as_bstr()), f.why))
        .collect();
    if found.len() > SHOWN {
        items.push(format!("and {} more", found.len() - SHOWN));
    }
    items.join(", ")
}

/// The error for a working tree (`root`) holding paths git refuses to add
/// or check out (exit 3): it names them, in the message (the first few, and
/// how many more) and in `error.invalid_paths` (the first [`NAMED`]).
pub fn in_working_tree(root: &Path, found: &[Invalid]) -> ValidateError {
    ValidateError::InWorkingTree {
        root: root.to_path_buf(),
        found: found.to_vec(),
    }
}

/// HFS+ reads `name` as `.` + `file` (ASCII case folded, the code points
/// HFS+ ignores left out).
fn is_hfs_alias(name: &BStr, file: &str) -> bool {
    let mut chars = name.chars().filter(|&c| {
        !matches!(
            c as u32,
            0x200c..=0x200f | 0x202a..=0x202e | 0x206a..=0x206f | 0xfeff
        )
    });
    if chars.next() != Some('.') {
        return false;
    }
    let mut want = file.chars();
    loop {
        match (want.next(), chars.next()) {
            (Some(a), Some(b)) if a.eq_ignore_ascii_case(&b) => {}
            (None, None) => return true,
            _ => return false,
        }
    }
}

/// NTFS reads `name` as `.` + `file`: trailing dots and spaces, or a
/// stream (`:`), left out; or its 8.3 short name (`gitatt~1`, or the
/// hashed `gi7d29~1` form), as git's `is_ntfs_dot_generic` checks.
fn is_ntfs_alias(name: &BStr, file: &str, short: &str) -> bool {
    let only_spaces_and_dots = |rest: &[u8]| {
        for &b in rest {
            if b == b':' {
                return true;
            }
            if b != b' ' && b != b'.' {
                return false;
            }
        }
        true
    };
    let n: &[u8] = name.as_bytes();
    let f = file.as_bytes();
    if n.first() == Some(&b'.') && n.len() > f.len() && n[1..=f.len()].eq_ignore_ascii_case(f) {
        return only_spaces_and_dots(&n[1 + f.len()..]);
    }
    if n.len() >= 8
        && n[..6].eq_ignore_ascii_case(&f[..6])
        && n[6] == b'~'
        && (b'1'..=b'4').contains(&n[7])
    {
        return only_spaces_and_dots(&n[8..]);
    }
    // The fall-back short name: the hashed prefix, `~`, digits, within 8.
    let short = short.as_bytes();
    let mut i = 0;
    let mut tilde = false;
    while i < 8 {
        let Some(&b) = n.get(i) else {
            return false;
        };
        if tilde {
            if !b.is_ascii_digit() {
                return false;
            }
        } else if b == b'~' {
            i += 1;
            match n.get(i) {
                Some(d) if (b'1'..=b'9').contains(d) => {}
                _ => return false,
            }
            tilde = true;
        } else if i >= 6
            || b & 0x80 != 0
            || short.get(i).is_none_or(|s| b.to_ascii_lowercase() != *s)
        {
            return false;
        }
        i += 1;
    }
    only_spaces_and_dots(&n[8..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(n: &str, kind: EntryKind) -> bool {
        name(n.as_bytes().as_bstr(), kind).is_some()
    }

    #[test]
    fn git_and_its_aliases_are_refused_in_any_letter_case() {
        for n in [
            ".git",
            ".GIT",
            ".Git",
            "git~1",
            "GIT~1",
            ".git.",
            ".git ",
            ".git. .",
            ".git::$INDEX_ALLOCATION",
            ".g\u{200c}it",
            "\u{feff}.git",
            ".",
            "..",
            "",
            "a/b",
            "a\\.git",
            ".git\\x",
            "x\\GIT~1\\y",
        ] {
            assert!(refused(n, EntryKind::Tree), "{n:?} should be refused");
            assert!(
                refused(n, EntryKind::Blob),
                "{n:?} should be refused as a file"
            );
        }
    }

    #[test]
    fn names_git_takes_on_linux_are_kept() {
        for n in [
            "a:b",
            "x?",
            "trailing.",
            "a\\b",
            "git~2",
            ".gitx",
            "git",
            ".github",
            ".gitignore",
            ".gitmodules",
            ".gitattributes",
            ".mailmap",
            "con",
            "aux.txt",
            "gitatt~1",
            ".git-blame-ignore-revs",
        ] {
            assert!(!refused(n, EntryKind::Blob), "{n:?} should be kept");
        }
        for n in [
            "README",
            "gitignore",
            ".gitignorex",
            ".mailmapx",
            "mailma~5",
        ] {
            assert!(
                !refused(n, EntryKind::Link),
                "{n:?} should be kept as a symlink"
            );
        }
    }

    #[test]
    fn files_git_reads_from_the_tree_may_not_be_symlinks() {
        for n in [
            ".gitmodules",
            ".GITMODULES",
            "gitmod~1",
            "gi7eba~1",
            ".gitmodules.",
            ".gitattributes",
            "gitatt~1",
            "gi7d29~9",
            ".gitignore ",
            ".GitIgnore",
            "gitign~2",
            "gi250a~1",
            ".mailmap",
            ".MAILMAP...",
            "mailma~1",
            "maba30~1",
            ".git\u{200d}ignore",
        ] {
            assert!(
                refused(n, EntryKind::Link),
                "{n:?} should be refused as a symlink"
            );
        }
    }

    #[test]
    fn every_component_of_a_path_is_checked() {
        let p = |s: &str, k| path(s.as_bytes().as_bstr(), k);
        assert_eq!(
            p("sub/.Git/config", EntryKind::Blob),
            Some(".git or an alias of it")
        );
        assert_eq!(
            p("a/../../x", EntryKind::Blob),
            Some("relative name (. or ..)")
        );
        assert_eq!(
            p("docs/.gitmodules", EntryKind::Link),
            Some("symlinked .gitmodules")
        );
        assert_eq!(p("docs/.gitmodules", EntryKind::Blob), None);
        // Only the last component has the entry's kind.
        assert_eq!(p(".gitattributes/x", EntryKind::Blob), None);
        assert_eq!(p("src/main.rs", EntryKind::Blob), None);
        assert_eq!(p("a//b", EntryKind::Blob), Some("empty name"));
        let long = "x".repeat(256);
        assert_eq!(
            p(&format!("a/{long}"), EntryKind::Blob),
            Some("name longer than 255 bytes")
        );
        assert_eq!(p(&"x".repeat(255), EntryKind::Blob), None);
    }

    #[test]
    fn symlink_targets_are_bounded() {
        assert_eq!(target(b""), Some("empty symlink target"));
        assert_eq!(target(b"a\0b"), Some("symlink target holding NUL"));
        assert!(target(&[b'a'; 4096]).is_some());
        assert_eq!(target(&[b'a'; 4095]), None);
    }
}
