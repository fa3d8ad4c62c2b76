//! A sparse-checkout file's patterns and whether they take in a path, as
//! git decides it (design §3.15): cone rules (top-level files, recursive
//! folders and the files directly in their parents) or gitignore-style
//! patterns (the last match deciding, a folder's match covering what is
//! below it).
//!
//! Owns: parsing, escaping and matching the patterns.
//! Never: reads or writes a file.

use super::*;

/// Which paths a sparse-checkout file takes in.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// Cone mode: files at the top, every file below a recursive folder, and
    /// the files directly in a parent folder.
    Cone {
        recursive: std::collections::BTreeSet<BString>,
        parents: std::collections::BTreeSet<BString>,
    },
    /// Non-cone mode: gitignore-style patterns, the last match deciding.
    Patterns(Vec<gix::glob::Pattern>),
}

impl Matcher {
    /// Parse a sparse-checkout file; `cone`: `core.sparseCheckoutCone`. A
    /// cone-mode file git would not read as a cone is read as patterns, as
    /// git does.
    pub fn parse(text: &[u8], cone: bool) -> Matcher {
        if cone {
            if let Some(m) = parse_cone(text) {
                return m;
            }
        }
        Matcher::Patterns(
            lines(text)
                .filter_map(|l| gix::glob::parse(l.as_bytes()))
                .collect(),
        )
    }

    /// A cone of these folders (`/`-separated, no leading or trailing slash).
    pub fn cone(dirs: &[BString]) -> Matcher {
        let mut recursive = std::collections::BTreeSet::new();
        let mut parents = std::collections::BTreeSet::new();
        for d in dirs {
            recursive.insert(d.clone());
            let mut at = d.as_slice();
            while let Some(slash) = at.rfind_byte(b'/') {
                at = &at[..slash];
                parents.insert(BString::from(at));
            }
        }
        Matcher::Cone { recursive, parents }
    }

    /// Is the file at `path` inside the sparse checkout?
    pub fn includes(&self, path: &BStr) -> bool {
        match self {
            Matcher::Cone { recursive, parents } => {
                let parent = match path.rfind_byte(b'/') {
                    None => return true,
                    Some(i) => &path[..i],
                };
                if parents.contains(parent.as_bstr()) || recursive.contains(parent.as_bstr()) {
                    return true;
                }
                let mut at = parent;
                while let Some(i) = at.rfind_byte(b'/') {
                    at = &at[..i];
                    if recursive.contains(at.as_bstr()) {
                        return true;
                    }
                }
                false
            }
            Matcher::Patterns(patterns) => {
                // git's `path_in_sparse_checkout`: the path as a file, then
                // each of its folders, until one level is decided.
                let mut end = path.len();
                let mut is_dir = false;
                loop {
                    let p = &path[..end];
                    let base = p.rfind_byte(b'/').map(|i| i + 1);
                    let hit = patterns.iter().rev().find(|pat| {
                        pat.matches_repo_relative_path(
                            p.as_bstr(),
                            base,
                            Some(is_dir),
                            gix::glob::pattern::Case::Sensitive,
                            gix::glob::wildmatch::Mode::NO_MATCH_SLASH_LITERAL,
                        )
                    });
                    if let Some(pat) = hit {
                        return !pat.is_negative();
                    }
                    match p.rfind_byte(b'/') {
                        Some(i) => {
                            end = i;
                            is_dir = true;
                        }
                        None => return false,
                    }
                }
            }
        }
    }
}

/// The lines of a sparse-checkout file (comments and blank lines left out).
pub(super) fn lines(text: &[u8]) -> impl Iterator<Item = &BStr> {
    text.lines()
        .map(|l| l.trim_end().as_bstr())
        .filter(|l| !l.is_empty() && !l.starts_with(b"#"))
}

/// A cone-mode file as git writes it: `/*`, `!/*/`, then for each parent
/// `/P/` + `!/P/*/`, and each recursive folder `/R/`. `None`: not a cone.
pub(super) fn parse_cone(text: &[u8]) -> Option<Matcher> {
    let mut positive = std::collections::BTreeSet::new();
    let mut negative = std::collections::BTreeSet::new();
    for l in lines(text) {
        let l: &[u8] = l.as_ref();
        if l == b"/*" || l == b"!/*/" {
            continue;
        }
        if let Some(rest) = l.strip_prefix(b"!/") {
            let dir = rest.strip_suffix(b"/*/")?;
            negative.insert(unescape(dir));
        } else if let Some(rest) = l.strip_prefix(b"/") {
            let dir = rest
                .strip_suffix(b"/*")
                .or_else(|| rest.strip_suffix(b"/"))?;
            if dir.is_empty() || dir.contains(&b'*') && !dir.contains(&b'\\') {
                return None;
            }
            positive.insert(unescape(dir));
        } else {
            return None;
        }
    }
    let parents: std::collections::BTreeSet<BString> =
        positive.intersection(&negative).cloned().collect();
    let recursive = positive.difference(&negative).cloned().collect();
    Some(Matcher::Cone { recursive, parents })
}

pub(super) fn unescape(s: &[u8]) -> BString {
    let mut out = Vec::with_capacity(s.len());
    let mut esc = false;
    for &b in s {
        if b == b'\\' && !esc {
            esc = true;
            continue;
        }
        esc = false;
        out.push(b);
    }
    out.into()
}

pub(super) fn escape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for &b in s {
        if matches!(b, b'*' | b'?' | b'[' | b']' | b'\\' | b'!' | b'#') {
            out.push(b'\\');
        }
        out.push(b);
    }
    out
}
