//! Why the source could not be found or opened, named by its real cause
//! (design §3.15 "Object formats" and "Discovery errors"): the `.git` git
//! would have stopped at, read as plain files (a `gitdir:` file pointing
//! nowhere or at something that is no repository, a symbolic link that
//! leads nowhere or back to itself, a `.git` that cannot be read, a FIFO or
//! other special file named `.git`), an object format or a ref format
//! (reftable) the git library cannot read, and a repository git refuses
//! for its owner ("dubious ownership", unless `safe.directory` lists it).
//!
//! Owns: those diagnoses, as `DiscoveryError` (what was found where, and
//! the I/O or git library error behind it); [`path_from_line`].
//! Never: words a help line or decides an error code (`ops::explain`
//! does); changes anything; never opens anything but a regular file or a
//! folder (reading a FIFO named `.git` would wait forever); decides nothing
//! about where the repository is (that is `repo`, with git's rules): it is
//! asked only after the search failed.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Why the source could not be found or opened. The message is the
/// `Display`; the code (`not_a_repository`, `unreadable_git_dir`, ...) and
/// the help: `ops::explain`.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// git's search found no repository; the message says where it looked
    /// (`repo` words it, knowing the search).
    #[error("{0}")]
    NotFound(String),
    /// `.git` is a symbolic link to nothing.
    #[error("{} is a symbolic link to {}, which does not exist", dotgit.display(), target.display())]
    DanglingLink { dotgit: PathBuf, target: PathBuf },
    /// `.git` is a file without a `gitdir:` line.
    #[error(
        "{} is a file that does not start with `gitdir: PATH` (git: \"invalid gitfile format\"), so it names no repository",
        dotgit.display()
    )]
    BadGitFile { dotgit: PathBuf },
    /// `.git` is a `gitdir:` file naming a path that does not exist.
    #[error("{} points to {}, which does not exist", dotgit.display(), target.display())]
    GitFileTargetMissing { dotgit: PathBuf, target: PathBuf },
    /// `.git` is a FIFO, socket or device.
    #[error(
        "{} is neither a folder nor a file (a FIFO, socket or device), so it names no repository",
        dotgit.display()
    )]
    SpecialFile { dotgit: PathBuf },
    /// What `.git` leads to (`git_dir`, itself for a folder) is no git
    /// repository.
    #[error(
        "{} ({source})",
        if dotgit == git_dir {
            format!("{} is a folder but not a git repository", dotgit.display())
        } else {
            format!("{} points to {}, which is not a git repository", dotgit.display(), git_dir.display())
        }
    )]
    NotGit {
        dotgit: PathBuf,
        git_dir: PathBuf,
        #[source]
        source: gix::Error,
    },
    /// `path` (a `.git` or what it leads to) cannot be read.
    #[error(
        "{} cannot be read ({source}), so git delegate cannot tell which repository this is",
        path.display()
    )]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `extensions.objectFormat` is neither SHA-1 nor SHA-256.
    #[error(
        "the repository {} uses the object format `{format}`, which the git library git delegate is built on cannot read",
        git_dir.display()
    )]
    UnsupportedObjectFormat { git_dir: PathBuf, format: String },
    /// `extensions.refStorage` is not `files` (reftable).
    #[error(
        "the repository {} keeps its refs in the `{format}` format, which the git library git delegate is built on cannot read",
        common_dir.display()
    )]
    UnsupportedRefFormat { common_dir: PathBuf, format: String },
    /// The repository at `shown` (canonical) belongs to `owner`, not `me`.
    #[error(
        "the repository at {} belongs to uid {owner}, not to you (uid {me}): git refuses to work in it (\"dubious ownership\") unless safe.directory lists it, and so does git delegate",
        shown.display()
    )]
    DubiousOwnership { shown: PathBuf, owner: u32, me: u32 },
}

/// A path written on one line of a git file (trailing newline and `\r` removed).
pub fn path_from_line(bytes: &[u8]) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let line = bytes.split(|&b| b == b'\n').next()?;
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    (!line.is_empty()).then(|| PathBuf::from(OsStr::from_bytes(line)))
}

/// The bytes of `path` when it is a regular file (never a FIFO or device).
fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    if !std::fs::metadata(path)?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    std::fs::read(path)
}

/// `not_a_repository` with `message` (what git's search looked through).
pub fn not_a_repository(message: String) -> DiscoveryError {
    DiscoveryError::NotFound(message)
}

fn unreadable(path: &Path, source: std::io::Error) -> DiscoveryError {
    DiscoveryError::Unreadable {
        path: path.to_path_buf(),
        source,
    }
}

/// The error for a repository in `format` (not SHA-1 or SHA-256).
pub fn unsupported_object_format(git_dir: &Path, format: &str) -> DiscoveryError {
    DiscoveryError::UnsupportedObjectFormat {
        git_dir: git_dir.to_path_buf(),
        format: format.to_string(),
    }
}

/// `extensions.objectFormat` of the repository whose git dir is `git_dir`
/// (read from its common dir's config file), when it is neither SHA-1 nor
/// SHA-256 (the formats the git library is built to read here).
pub fn unreadable_object_format(git_dir: &Path) -> Option<String> {
    let common = match read_regular(&git_dir.join("commondir")) {
        Ok(text) => git_dir.join(path_from_line(&text)?),
        Err(_) => git_dir.to_path_buf(),
    };
    let text = read_regular(&common.join("config")).ok()?;
    let meta = gix::config::file::Metadata::from(gix::config::Source::Local);
    let file = gix::config::File::from_bytes_no_includes(&text, meta, Default::default()).ok()?;
    let format = file.string("extensions.objectFormat")?.to_string();
    (!format.eq_ignore_ascii_case("sha1") && !format.eq_ignore_ascii_case("sha256"))
        .then_some(format)
}

/// Why the nearest `.git` at or above `cwd` is not a repository git
/// delegate can open, when it can tell: that `.git` is what git would have
/// stopped at (or skipped, finding nothing above it either). `limit`: the
/// folder git's search stopped at (a ceiling, or the first folder on
/// another filesystem), which is not looked into, nor anything above it.
pub fn diagnose(cwd: &Path, limit: Option<&Path>) -> Option<DiscoveryError> {
    for dir in cwd.ancestors() {
        if limit.is_some_and(|l| dir == l || std::fs::canonicalize(dir).is_ok_and(|d| d == l)) {
            return None;
        }
        let dotgit = dir.join(".git");
        let lmeta = match std::fs::symlink_metadata(&dotgit) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Some(unreadable(&dotgit, e)),
        };
        return diagnose_dot_git(dir, &dotgit, &lmeta).err();
    }
    None
}

/// `Ok(())` when `dotgit` in `dir` leads to a git dir the library can read.
fn diagnose_dot_git(
    dir: &Path,
    dotgit: &Path,
    lmeta: &std::fs::Metadata,
) -> Result<(), DiscoveryError> {
    let meta = if lmeta.file_type().is_symlink() {
        match std::fs::metadata(dotgit) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(DiscoveryError::DanglingLink {
                    dotgit: dotgit.to_path_buf(),
                    target: std::fs::read_link(dotgit).unwrap_or_default(),
                });
            }
            Err(e) => return Err(unreadable(dotgit, e)),
        }
    } else {
        lmeta.clone()
    };
    let git_dir = if meta.is_dir() {
        dotgit.to_path_buf()
    } else if meta.is_file() {
        let text = read_regular(dotgit).map_err(|e| unreadable(dotgit, e))?;
        let Some(target) = text
            .strip_prefix(b"gitdir:")
            .and_then(|t| path_from_line(t.trim_ascii_start()))
        else {
            return Err(DiscoveryError::BadGitFile {
                dotgit: dotgit.to_path_buf(),
            });
        };
        let target = dir.join(target);
        match std::fs::metadata(&target) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(DiscoveryError::GitFileTargetMissing {
                    dotgit: dotgit.to_path_buf(),
                    target,
                });
            }
            Err(e) => return Err(unreadable(&target, e)),
        }
        target
    } else {
        return Err(DiscoveryError::SpecialFile {
            dotgit: dotgit.to_path_buf(),
        });
    };
    if let Err(e) = std::fs::read_dir(&git_dir) {
        return Err(unreadable(&git_dir, e));
    }
    if let Some(format) = unreadable_object_format(&git_dir) {
        return Err(unsupported_object_format(&git_dir, &format));
    }
    if let Err(source) = gix::discover::is_git(&git_dir) {
        return Err(DiscoveryError::NotGit {
            dotgit: dotgit.to_path_buf(),
            git_dir,
            source,
        });
    }
    if let Some(e) = dubious_ownership(dir, dotgit, &git_dir) {
        return Err(e);
    }
    Ok(())
}

/// The user git counts as "you": the effective uid, or for root `SUDO_UID`
/// when set (as git and the git library count it).
fn current_user() -> u32 {
    let euid = rustix::process::geteuid().as_raw();
    if euid == 0 {
        if let Some(uid) = std::env::var("SUDO_UID")
            .ok()
            .and_then(|v| v.parse::<u32>().ok())
        {
            return uid;
        }
    }
    euid
}

/// git's refusal of a repository someone else owns (its work tree, `.git`
/// or git dir), which `safe.directory` lifts: asked only after the git
/// library refused to open the repository, which honours that setting as
/// git does.
fn dubious_ownership(worktree: &Path, dotgit: &Path, git_dir: &Path) -> Option<DiscoveryError> {
    use std::os::unix::fs::MetadataExt;
    let me = current_user();
    let owner = [worktree, dotgit, git_dir]
        .into_iter()
        .filter_map(|p| std::fs::symlink_metadata(p).ok().map(|m| m.uid()))
        .find(|&uid| uid != me)?;
    let shown = std::fs::canonicalize(worktree).unwrap_or_else(|_| worktree.to_path_buf());
    Some(DiscoveryError::DubiousOwnership { shown, owner, me })
}

/// The refusal of a repository whose refs are not in git's `files` format
/// (`extensions.refStorage`, such as `reftable`), which the git library
/// cannot read: without it, HEAD reads as undecodable and the refs as none.
pub fn unsupported_ref_format(repo: &gix::Repository) -> Option<DiscoveryError> {
    let config = repo.config_snapshot();
    let format = config.string("extensions.refStorage")?.to_string();
    if format.eq_ignore_ascii_case("files") {
        return None;
    }
    Some(DiscoveryError::UnsupportedRefFormat {
        common_dir: repo.common_dir().to_path_buf(),
        format,
    })
}
