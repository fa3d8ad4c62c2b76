//! The policy (design §3.9): which ignored files of the source are carried
//! into each new worktree (`.worktreeinclude`, `workspace.copy-ignored`,
//! `--copy-ignored`), finding the ignored entries it matches, and carrying
//! them with the copy engine of `carry`.
//!
//! Owns: the patterns, the search for the entries they match, the carry.
//! Never: carries anything no pattern asks for, or writes into the source.

use super::*;

/// The `copy-ignored` patterns of a prepare: `.worktreeinclude`, then
/// `workspace.copy-ignored`, then `--copy-ignored`; like gitignore, a later
/// pattern wins over an earlier one, and `!pattern` excludes again.
pub struct Policy {
    search: gix::ignore::Search,
    count: usize,
}

impl Policy {
    /// Read the patterns of a source. `cli` are the `--copy-ignored` values.
    pub fn load(source_root: &Path, config: &[String], cli: &[String]) -> Result<Policy> {
        for p in config.iter().chain(cli) {
            if p.contains('\n') || p.contains('\r') {
                return Err(WorkspaceError::MultiLine { pattern: p.clone() });
            }
        }
        let parse = gix::ignore::search::Ignore {
            support_precious: false,
        };
        let mut search = gix::ignore::Search::default();
        let include = source_root.join(INCLUDE_FILE);
        match std::fs::symlink_metadata(&include) {
            Ok(m) if m.is_file() => {
                let bytes =
                    std::fs::read(&include).map_err(WorkspaceError::io("read", &include))?;
                search
                    .add_patterns_buffer(&bytes, include.clone(), None, parse)
                    .map_err(WorkspaceError::io("read", &include))?;
            }
            Ok(_) => return Err(WorkspaceError::IncludeNotFile { path: include }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(WorkspaceError::io("read", &include)(source)),
        }
        for (list, name) in [(config, "workspace.copy-ignored"), (cli, "--copy-ignored")] {
            if list.is_empty() {
                continue;
            }
            let text = list.join("\n");
            search
                .add_patterns_buffer(text.as_bytes(), PathBuf::from(name), None, parse)
                .map_err(|source| WorkspaceError::Patterns { name, source })?;
        }
        let count = search.patterns.iter().map(|l| l.patterns.len()).sum();
        Ok(Policy { search, count })
    }

    /// No pattern at all: nothing is carried and the source is not even walked.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// `Some(true)`: a pattern asks for `path`; `Some(false)`: a `!pattern` refuses it.
    pub fn matches(&self, path: &BStr, is_dir: bool) -> Option<bool> {
        self.search
            .pattern_matching_relative_path(path, Some(is_dir), gix::glob::pattern::Case::Sensitive)
            .map(|m| !m.pattern.is_negative())
    }

    /// Could a pattern match something inside the folder `dir`?
    pub fn may_match_below(&self, dir: &BStr) -> bool {
        use gix::glob::pattern::Mode as M;
        let mut prefix = BString::from(dir);
        prefix.push(b'/');
        self.search
            .patterns
            .iter()
            .flat_map(|l| &l.patterns)
            .any(|m| {
                let p = &m.pattern;
                if p.is_negative() {
                    return false;
                }
                if p.mode.contains(M::NO_SUB_DIR) {
                    return !p.mode.contains(M::ABSOLUTE);
                }
                let literal = &p.text[..p.first_wildcard_pos.unwrap_or(p.text.len())];
                if literal.len() >= prefix.len() {
                    literal.starts_with(&prefix)
                } else {
                    prefix.starts_with(literal)
                }
            })
    }
}

/// One ignored entry to carry (a file, symlink, or a whole folder).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Carried {
    pub path: BString,
    pub is_dir: bool,
}

struct Finder<'a> {
    policy: &'a Policy,
    found: Vec<Carried>,
    descend: Vec<BString>,
}

impl gix::dir::walk::Delegate for Finder<'_> {
    fn emit(
        &mut self,
        entry: gix::dir::EntryRef<'_>,
        _collapsed: Option<gix::dir::entry::Status>,
    ) -> gix::dir::walk::Action {
        use gix::dir::entry::{Kind, Status};
        if matches!(entry.status, Status::Ignored(_)) {
            let is_dir = matches!(entry.disk_kind, Some(Kind::Directory | Kind::Repository));
            let carry_able = matches!(
                entry.disk_kind,
                Some(Kind::Directory | Kind::Repository | Kind::File | Kind::Symlink)
            );
            let path = entry.rela_path.as_ref();
            match self.policy.matches(path, is_dir) {
                Some(true) if carry_able => self.found.push(Carried {
                    path: path.to_owned(),
                    is_dir,
                }),
                Some(_) => {}
                None if is_dir && self.policy.may_match_below(path) => {
                    self.descend.push(path.to_owned())
                }
                None => {}
            }
        }
        std::ops::ControlFlow::Continue(())
    }
}

/// The ignored files and folders of the source that the policy asks for, sorted.
pub fn find(repo: &gix::Repository, policy: &Policy) -> Result<Vec<Carried>> {
    if policy.is_empty() {
        return Ok(Vec::new());
    }
    let Some(workdir) = repo.workdir().map(Path::to_path_buf) else {
        return Ok(Vec::new());
    };
    let git = |source: gix::Error| WorkspaceError::List { source };
    let index = repo.index_or_empty().map_err(git)?;
    let opts = repo
        .dirwalk_options()
        .map_err(git)?
        .emit_ignored(Some(gix::dir::walk::EmissionMode::Matching))
        .emit_untracked(gix::dir::walk::EmissionMode::Matching)
        .emit_tracked(false)
        .emit_empty_directories(false)
        .recurse_repositories(false);
    let mut finder = Finder {
        policy,
        found: Vec::new(),
        descend: Vec::new(),
    };
    // Ctrl-C during a prepare stops the walk (design §3.15).
    repo.dirwalk(
        &index,
        None::<&str>,
        &gix::interrupt::IS_INTERRUPTED,
        opts,
        &mut finder,
    )
    .map_err(git)?;
    if gix::interrupt::is_triggered() {
        return Err(WorkspaceError::Interrupted);
    }
    // Below an ignored folder everything is ignored (git cannot re-include
    // there): walk such folders ourselves where a pattern may match inside.
    let mut stack = std::mem::take(&mut finder.descend);
    while let Some(dir) = stack.pop() {
        let abs = workdir.join(crate::sys::paths::to_os(dir.as_ref()));
        let rd = match std::fs::read_dir(&abs) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(WorkspaceError::io("read", &abs)(source)),
        };
        for entry in rd {
            let entry = entry.map_err(WorkspaceError::io("read", &abs))?;
            let Ok(ft) = entry.file_type() else { continue };
            use std::os::unix::ffi::OsStrExt;
            let mut path = dir.clone();
            path.push(b'/');
            path.extend_from_slice(entry.file_name().as_bytes());
            let is_dir = ft.is_dir();
            if !(is_dir || ft.is_file() || ft.is_symlink()) {
                continue;
            }
            match policy.matches(path.as_ref(), is_dir) {
                Some(true) => finder.found.push(Carried { path, is_dir }),
                Some(false) => {}
                None if is_dir && policy.may_match_below(path.as_ref()) => stack.push(path),
                None => {}
            }
        }
    }
    finder.found.sort();
    finder.found.dedup();
    // A folder carried whole already holds whatever else matched inside it.
    let dirs: std::collections::HashSet<BString> = finder
        .found
        .iter()
        .filter(|c| c.is_dir)
        .map(|c| c.path.clone())
        .collect();
    let out: Vec<Carried> = finder
        .found
        .into_iter()
        .filter(|c| {
            let p: &[u8] = c.path.as_ref();
            !p.iter()
                .enumerate()
                .any(|(i, &b)| b == b'/' && dirs.contains(p[..i].as_bstr()))
        })
        .collect();
    Ok(out)
}

/// Copy `entries` (relative to `src_root`) into every destination root,
/// cloning where possible and copying otherwise. Missing parent folders are
/// created with the source's modes. Returns what each destination received.
pub fn carry(
    src_root: &Path,
    entries: &[Carried],
    dst_roots: &[PathBuf],
) -> Result<Vec<CarryStats>> {
    if entries.is_empty() || dst_roots.is_empty() {
        return Ok(vec![CarryStats::default(); dst_roots.len()]);
    }
    // One walker per destination, in parallel: FICLONE and the metadata
    // writes are per-file system calls that overlap well.
    crate::sys::parallel::try_map(
        dst_roots,
        crate::sys::parallel::threads(4),
        copy_panicked,
        |dst| carry_one(src_root, entries, dst),
    )
}

/// What a copying thread's panic is reported as.
pub(crate) fn copy_panicked() -> WorkspaceError {
    WorkspaceError::Panicked { what: "copying" }
}

fn carry_one(src_root: &Path, entries: &[Carried], dst_root: &Path) -> Result<CarryStats> {
    let src = open_root(src_root)?;
    let dst = open_root(dst_root)?;
    let mut keep = |_: &[u8], _: FileType| Ok(Visit::Copy);
    let mut walker: Walker<'_> = Walker::new(
        Method::CloneOrCopy,
        src_root.to_path_buf(),
        vec![dst_root.to_path_buf()],
        &mut keep,
    );
    for (n, entry) in entries.iter().enumerate() {
        if n == 1 {
            crate::sys::interrupt::pause("carrying");
        }
        if gix::interrupt::is_triggered() {
            return Err(WorkspaceError::Interrupted);
        }
        let comps: Vec<&[u8]> = entry.path.split_str("/").collect();
        let Some((name, parents)) = comps.split_last() else {
            continue;
        };
        // Open (or create) the parent folders on both sides, never through a symlink.
        let mut sdir: Option<OwnedFd> = None;
        let mut ddir: Option<OwnedFd> = None;
        let mut rel: Vec<u8> = Vec::new();
        for comp in parents {
            let s_parent = sdir.as_ref().map(|f| f.as_fd()).unwrap_or(src.as_fd());
            let d_parent = ddir.as_ref().map(|f| f.as_fd()).unwrap_or(dst.as_fd());
            if !rel.is_empty() {
                rel.push(b'/');
            }
            rel.extend_from_slice(comp);
            let s = open_dir_at(s_parent, *comp).map_err(|e| walker.src_err(&rel, "open", e))?;
            let mode = rfs::fstat(&s).map(|st| st.st_mode as u32).unwrap_or(0o755);
            let d = ensure_dir_at(d_parent, comp, mode)
                .map_err(|e| walker.dst_err(0, &rel, "create", e))?;
            sdir = Some(s);
            ddir = Some(d);
        }
        let s_parent = sdir.as_ref().map(|f| f.as_fd()).unwrap_or(src.as_fd());
        let d_parent = ddir.as_ref().map(|f| f.as_fd()).unwrap_or(dst.as_fd());
        let kind = match rfs::statat(s_parent, *name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => FileType::from_raw_mode(st.st_mode as _),
            // Gone since the walk: nothing to carry.
            Err(Errno::NOENT) => continue,
            Err(e) => return Err(walker.src_err(&entry.path, "read", e)),
        };
        walker.copy_entry(s_parent, &[d_parent], name, kind, &mut rel)?;
    }
    Ok(walker.stats[0])
}

/// Find the source's ignored entries the policy asks for and carry them
/// into every workspace root (after checkout). Returns what each received.
pub fn carry_ignored(
    repo: &gix::Repository,
    policy: &Policy,
    roots: &[PathBuf],
) -> Result<Vec<CarryStats>> {
    if policy.is_empty() {
        return Ok(vec![CarryStats::default(); roots.len()]);
    }
    let Some(src_root) = repo.workdir() else {
        return Ok(vec![CarryStats::default(); roots.len()]);
    };
    let src_root = crate::sys::fs::canonical(src_root)?;
    let entries = find(repo, policy)?;
    carry(&src_root, &entries, roots)
}
