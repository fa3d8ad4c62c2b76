//! Scratch workspaces (design §2, §3.1 step 4): per task, a reflink copy of the
//! whole source root (`.git` and ignored files included) at
//! `<parent of the source root>/.git-delegate-scratch-<random>/project`,
//! cloned file by file with FICLONE, validated before it is handed out, and
//! removed again through opened folder handles.
//!
//! Owns: making, recognising (the owner marker), validating, listing for the
//! sweep, and removing scratch copies.
//! Never: copies file data (a filesystem that cannot clone is refused), hands
//! out a copy whose git metadata or symlinks lead outside it, or removes a
//! folder whose identity (device and inode recorded in the marker) is not the
//! one it made; it never follows a symlink while removing.
//! Making, sweeping and removing copies fail with `WorkspaceError` (the
//! copy, the file and the cause; `ops::explain` words it).

// `stat` field widths differ between targets: the casts are deliberate.
#![allow(clippy::unnecessary_cast)]

use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use crate::git::repo::Source;
use crate::record::batch::CarryStats;
use crate::workspace::carry::{self, Method, Visit, Walker};
use crate::workspace::WorkspaceError;

mod removal;

pub use removal::{
    health, orphan_messages, remove, remove_candidate, remove_counting, sweep_candidates, Candidate,
};
pub(crate) use removal::{remove_contents, remove_dir_at};

/// `task.worktree_id` of a scratch task: it has no worktree registration.
pub const WORKTREE_ID: &str = crate::record::batch::SCRATCH_WORKTREE_ID;
/// Folder name prefix of the containers beside the source root.
pub const CONTAINER_PREFIX: &str = ".git-delegate-scratch-";
/// The copy inside a container.
pub const PROJECT: &str = "project";
/// The owner marker inside a container.
pub const MARKER: &str = "owner.toml";

/// The owner marker: who made this copy, and the identity of its `project` folder.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Owner {
    pub batch: String,
    pub task: String,
    /// The source root the copy was made from.
    pub source: PathBuf,
    /// The canonical common dir of the source repository.
    pub common_dir: PathBuf,
    /// The process that made the copy.
    pub pid: u32,
    pub host: String,
    pub created_at: String,
    /// Device and inode of the `project` folder.
    pub dev: u64,
    pub ino: u64,
}

pub(super) fn errno_io(e: Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e.raw_os_error())
}

type Result<T, E = WorkspaceError> = std::result::Result<T, E>;

fn refused(root: &Path, why: String) -> WorkspaceError {
    WorkspaceError::Refused {
        root: root.to_path_buf(),
        why,
    }
}

/// `what` on `path` failed with `source`.
pub(super) fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> WorkspaceError {
    let path = path.to_path_buf();
    move |source| WorkspaceError::io(what, &path)(source)
}

fn random_hex() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

/// The folder beside which copies live: the parent of the main working tree
/// (for a repository whose common dir is `<root>/.git`).
pub(super) fn home_of(common_dir: &Path) -> Option<PathBuf> {
    if common_dir.file_name()? != ".git" {
        return None;
    }
    common_dir.parent()?.parent().map(Path::to_path_buf)
}

/// Choose `count` new task roots `<parent>/.git-delegate-scratch-<random>/project`.
pub fn plan(source_root: &Path, count: usize) -> Result<Vec<PathBuf>> {
    let parent = source_root
        .parent()
        .ok_or_else(|| WorkspaceError::NoParent {
            root: source_root.to_path_buf(),
        })?;
    let mut out: Vec<PathBuf> = Vec::with_capacity(count);
    while out.len() < count {
        let c = parent.join(format!("{CONTAINER_PREFIX}{}", random_hex()));
        if c.symlink_metadata().is_err() && !out.iter().any(|o| o.parent() == Some(&c)) {
            out.push(c.join(PROJECT));
        }
    }
    Ok(out)
}

/// Refuse what cannot become a scratch copy before anything is made: a
/// source whose `.git` is a file (a linked worktree or a gitfile), and a
/// filesystem that cannot clone from the source into the folder beside it.
pub fn preflight(source: &Source) -> Result<()> {
    let dot_git = source.root.join(".git");
    let meta = dot_git.symlink_metadata().map_err(io("read", &dot_git))?;
    if !meta.is_dir() {
        return Err(WorkspaceError::GitFile {
            symlink: meta.file_type().is_symlink(),
            dot_git,
        });
    }
    if crate::sys::fs::canonical(&dot_git)? != source.common_dir {
        return Err(WorkspaceError::NotCommonDir {
            dot_git,
            common_dir: source.common_dir.clone(),
        });
    }
    let parent = source
        .root
        .parent()
        .ok_or_else(|| WorkspaceError::NoParent {
            root: source.root.clone(),
        })?;
    // Clone a real file of the source into a probe folder beside it.
    let probe_dir = parent.join(format!("{CONTAINER_PREFIX}probe-{}", random_hex()));
    std::fs::create_dir(&probe_dir).map_err(io("create", &probe_dir))?;
    let result = (|| {
        let src_path = dot_git.join("HEAD");
        let src = std::fs::File::open(&src_path).map_err(io("open", &src_path))?;
        let dst_path = probe_dir.join("probe");
        let dst = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&dst_path)
            .map_err(io("create", &dst_path))?;
        match rfs::ioctl_ficlone(&dst, &src) {
            Ok(()) => Ok(()),
            Err(e) if carry::is_no_reflink(e) => Err(carry::no_reflink(&src_path, parent, e)),
            Err(e) => Err(io("clone into", &dst_path)(errno_io(e))),
        }
    })();
    let _ = std::fs::remove_file(probe_dir.join("probe"));
    let _ = std::fs::remove_dir(&probe_dir);
    result
}

/// Make one scratch copy per `(task name, root)`, in parallel, validated.
/// On failure every container made here is removed again.
pub fn create_all(
    source: &Source,
    batch: &str,
    tasks: &[(String, PathBuf)],
) -> Result<Vec<CarryStats>> {
    let mut made: Vec<PathBuf> = Vec::new();
    let src_root = source.root.as_path();
    let result = (|| {
        for (name, root) in tasks {
            make_container(source, batch, name, root)?;
            made.push(root.clone());
        }
        crate::sys::parallel::try_map(
            tasks,
            crate::sys::parallel::threads(4),
            carry::copy_panicked,
            |(_, root)| copy_one(src_root, root),
        )
    })();
    if result.is_err() {
        for root in &made {
            let _ = remove(&source.common_dir, root);
        }
        for (_, root) in tasks {
            // A container whose marker was never written is empty: rmdir only.
            if let Some(c) = root.parent() {
                let _ = std::fs::remove_dir(root);
                let _ = std::fs::remove_file(c.join(format!("{MARKER}.tmp")));
                let _ = std::fs::remove_dir(c);
            }
        }
    }
    result
}

/// Create `<container>/project` and the owner marker.
fn make_container(source: &Source, batch: &str, task: &str, root: &Path) -> Result<()> {
    let container = root.parent().ok_or(WorkspaceError::NoContainer)?;
    std::fs::create_dir(container).map_err(io("create", container))?;
    std::fs::create_dir(root).map_err(io("create", root))?;
    let st = rfs::lstat(root).map_err(|e| io("read", root)(errno_io(e)))?;
    let owner = Owner {
        batch: batch.to_string(),
        task: task.to_string(),
        source: source.root.clone(),
        common_dir: source.common_dir.clone(),
        pid: std::process::id(),
        host: crate::sys::process::hostname(),
        created_at: crate::sys::time::rfc3339(crate::sys::time::now()),
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
    };
    let text = toml::to_string_pretty(&owner).map_err(|source| WorkspaceError::Owner {
        root: root.to_path_buf(),
        source,
    })?;
    let tmp = container.join(format!("{MARKER}.tmp"));
    std::fs::write(&tmp, text).map_err(io("write", &tmp))?;
    std::fs::rename(&tmp, container.join(MARKER)).map_err(io("write", &container.join(MARKER)))?;
    Ok(())
}

/// Clone the source root into `root`, then validate the copy.
fn copy_one(src_root: &Path, root: &Path) -> Result<CarryStats> {
    let src = carry::open_root(src_root)?;
    let dst = carry::open_root(root)?;
    let mut filter = |rel: &[u8], kind: FileType| -> Result<Visit> {
        // Our own state and the source's worktree registrations stay behind:
        // a copy must not be able to remove the source's linked worktrees.
        if rel == b".git/delegate" || rel == b".git/worktrees" {
            return Ok(Visit::Skip);
        }
        // Lock files of git operations running in the source right now
        // would leave the copy locked: the copy gets the state before them.
        if rel.starts_with(b".git/") && rel.ends_with(b".lock") && kind == FileType::RegularFile {
            return Ok(Visit::Skip);
        }
        let base = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
        if base == b".git" && rel != b".git" && !rel.starts_with(b".git/") {
            return Err(refused(
                root,
                format!(
                    "{} is a nested repository",
                    crate::sys::paths::quote(gix::bstr::BStr::new(rel))
                ),
            ));
        }
        Ok(Visit::Copy)
    };
    let mut walker: Walker<'_> = Walker::new(
        Method::CloneOnly,
        src_root.to_path_buf(),
        vec![root.to_path_buf()],
        &mut filter,
    );
    walker.record_symlinks = true;
    let mut rel = Vec::new();
    walker.copy_contents(src.as_fd(), &[dst.as_fd()], &mut rel)?;
    // The copy's root gets the source root's mode.
    if let Ok(st) = rfs::fstat(&src) {
        let _ = rfs::fchmod(&dst, Mode::from_raw_mode(st.st_mode as u32 & 0o7777));
    }
    let stats = walker.stats[0];
    let symlinks = std::mem::take(&mut walker.symlinks);
    let repo = validate(root, dst.as_fd(), &symlinks)?;
    refresh_index(&repo, src_root, root)?;
    Ok(stats)
}

/// Give the copy's index the stat data of the copied files, so the first
/// status or snapshot of an untouched copy hashes nothing (the copies have
/// new inodes and change times). An entry is refreshed only where the
/// source file is clean by its index entry, not racily so (strictly older
/// than the source's index), and its copy kept size and modification time:
/// anything else keeps its old stat data and is simply hashed when looked at.
fn refresh_index(repo: &gix::Repository, src_root: &Path, root: &Path) -> Result<()> {
    use gix::index::entry::{stat, Mode as EMode, Stat};
    let index_path = root.join(".git/index");
    let src_index = src_root.join(".git/index");
    let Ok(src_meta) = std::fs::symlink_metadata(&src_index) else {
        return Ok(());
    };
    let Ok(src_index_secs) = src_meta
        .modified()
        .map_err(|_| ())
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).map_err(|_| ()))
        .map(|d| d.as_secs())
    else {
        return Ok(());
    };
    let git = |source: gix::Error| WorkspaceError::ScratchIndex {
        root: root.to_path_buf(),
        source,
    };
    let mut index =
        match gix::index::File::at(&index_path, repo.object_hash(), false, Default::default()) {
            Ok(i) => i,
            Err(_) => return Ok(()), // unreadable: git will rebuild it, nothing to gain here
        };
    if index.link().is_some() {
        return Ok(()); // a split index: leave it to git
    }
    let opts = stat::Options {
        trust_ctime: true,
        check_stat: true,
        use_nsec: true,
        use_stdev: false,
    };
    let stat_of = |p: &Path| {
        gix::index::fs::Metadata::from_path_no_follow(p)
            .ok()
            .and_then(|m| Stat::from_fs(&m).ok())
    };
    let mut changed = 0usize;
    let mut newest = 0u32;
    for (entry, path) in index.entries_mut_with_paths() {
        if entry.stage_raw() != 0
            || entry.mode == EMode::COMMIT
            || entry.flags.intersects(
                gix::index::entry::Flags::SKIP_WORKTREE | gix::index::entry::Flags::INTENT_TO_ADD,
            )
            || u64::from(entry.stat.mtime.secs) >= src_index_secs
        {
            continue;
        }
        let rel = crate::sys::paths::to_os(path);
        let (Some(src), Some(copy)) = (stat_of(&src_root.join(&rel)), stat_of(&root.join(&rel)))
        else {
            continue;
        };
        if !entry.stat.matches(&src, opts) || copy.size != src.size || copy.mtime != src.mtime {
            continue;
        }
        entry.stat = copy;
        newest = newest.max(copy.mtime.secs);
        changed += 1;
    }
    if changed == 0 {
        return Ok(());
    }
    index.write(Default::default()).map_err(git)?;
    // Entries are not racy when strictly older than the index (whole seconds).
    let now = std::time::SystemTime::now();
    let newest = std::time::UNIX_EPOCH + std::time::Duration::from_secs(u64::from(newest) + 1);
    if newest > now {
        if let Ok(f) = std::fs::OpenOptions::new().write(true).open(&index_path) {
            let _ = f.set_modified(newest);
        }
    }
    Ok(())
}

/// Does the symlink at `rel` (inside the copy) point outside the copy?
fn symlink_escapes(root_fd: BorrowedFd<'_>, rel: &[u8]) -> bool {
    let target = match rfs::readlinkat(root_fd, rel, Vec::new()) {
        Ok(t) => t.into_bytes(),
        Err(_) => return true,
    };
    if target.first() == Some(&b'/') {
        return true;
    }
    // Lexically: never above the copy's root.
    let mut depth: i64 = rel.iter().filter(|&&b| b == b'/').count() as i64;
    for comp in target.split(|&b| b == b'/') {
        match comp {
            b"" | b"." => {}
            b".." => {
                depth -= 1;
                if depth < 0 {
                    return true;
                }
            }
            _ => depth += 1,
        }
    }
    // And as the kernel resolves it, through the copy's other symlinks.
    !matches!(
        rfs::openat2(
            root_fd,
            rel,
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        ),
        Ok(_) | Err(Errno::NOENT) | Err(Errno::NOTDIR) | Err(Errno::NOSYS)
    )
}

/// Refuse a copy whose symlinks or git metadata lead outside it; returns
/// the copy opened as a repository.
fn validate(root: &Path, root_fd: BorrowedFd<'_>, symlinks: &[Vec<u8>]) -> Result<gix::Repository> {
    for rel in symlinks {
        if symlink_escapes(root_fd, rel) {
            return Err(refused(
                root,
                format!(
                    "the symlink {} points outside the copy",
                    crate::sys::paths::quote(gix::bstr::BStr::new(rel))
                ),
            ));
        }
    }
    let dot_git = root.join(".git");
    match dot_git.symlink_metadata() {
        Ok(m) if m.is_dir() => {}
        _ => return Err(refused(root, "its .git is not a folder".into())),
    }
    if dot_git.join("commondir").symlink_metadata().is_ok() {
        return Err(refused(
            root,
            ".git/commondir redirects the repository's common folder".into(),
        ));
    }
    let mut repo = gix::open_opts(root, gix::open::Options::isolated())
        .map_err(|e| refused(root, format!("git cannot open the copy ({e})")))?;
    // The copy's own config is its worker's: only recorded drivers run.
    crate::git::drivers::restrict(&mut repo)?;
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let root_c = canon(root);
    let git_c = canon(&dot_git);
    if let Some(wt) = repo
        .config_snapshot()
        .string("core.worktree")
        .map(|v| v.to_string())
    {
        let p = Path::new(&wt);
        let resolved = if p.is_absolute() {
            p.to_path_buf()
        } else {
            dot_git.join(p)
        };
        if canon(&resolved) != root_c {
            return Err(refused(
                root,
                format!("git config core.worktree = {wt:?} points outside the copy"),
            ));
        }
    }
    let workdir_ok = repo.workdir().map(canon) == Some(root_c.clone());
    let git_ok = canon(repo.git_dir()) == git_c && canon(repo.common_dir()) == git_c;
    if !workdir_ok || !git_ok {
        return Err(refused(
            root,
            format!(
                "git sees its working tree at {} and its repository at {}",
                repo.workdir()
                    .map(|w| w.display().to_string())
                    .unwrap_or_else(|| "(none)".into()),
                repo.common_dir().display()
            ),
        ));
    }
    Ok(repo)
}
