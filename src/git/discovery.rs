//! Why the source could not be found or opened, named by its real cause
//! (design §3.15 "Object formats" and "Discovery errors"): the `.git` git
//! would have stopped at, read as plain files (a `gitdir:` file pointing
//! nowhere or at something that is no repository, a symbolic link that
//! leads nowhere or back to itself, a `.git` that cannot be read, a FIFO or
//! other special file named `.git`), an object format or a ref format
//! (reftable) the git library cannot read, and a repository git refuses
//! for its owner ("dubious ownership", unless `safe.directory` lists it).
//!
//! Owns: those diagnoses and their errors; [`path_from_line`].
//! Never: changes anything; never opens anything but a regular file or a
//! folder (reading a FIFO named `.git` would wait forever); decides nothing
//! about where the repository is (that is `repo`, with git's rules): it is
//! asked only after the search failed.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::error::{Code, Error};
use crate::sys::paths::shell_quote;

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

pub fn not_a_repository(message: String) -> Error {
    not_a_repository_with(
        message,
        "run git delegate from inside a git working tree, or pass `git -C DIR delegate ...`".into(),
    )
}

fn not_a_repository_with(message: String, help: String) -> Error {
    Error::state(Code::NotARepository, message, help)
}

fn unreadable(path: &Path, err: &std::io::Error) -> Error {
    let shown = shell_quote(&path.to_string_lossy());
    let help = if err.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
        format!("{shown} is a symbolic link that leads back to itself: point it at the repository's git folder, or remove it (`rm {shown}`)")
    } else if err.kind() == std::io::ErrorKind::PermissionDenied {
        format!("run git delegate as a user who may read it, or give yourself read access (`ls -ld {shown}` shows its owner and mode)")
    } else {
        format!("check {shown} (`ls -ld {shown}`) and run the command again")
    };
    Error::state(
        Code::UnreadableGitDir,
        format!(
            "{} cannot be read ({err}), so git delegate cannot tell which repository this is",
            path.display()
        ),
        help,
    )
}

/// The error for a repository in `format` (not SHA-1 or SHA-256).
pub fn unsupported_object_format(git_dir: &Path, format: &str) -> Error {
    Error::state(
        Code::UnsupportedObjectFormat,
        format!(
            "the repository {} uses the object format `{format}`, which the git library git delegate is built on cannot read",
            git_dir.display()
        ),
        "git delegate works in SHA-1 and SHA-256 repositories; use it in a clone of the project in one of those formats",
    )
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
pub fn diagnose(cwd: &Path, limit: Option<&Path>) -> Option<Error> {
    for dir in cwd.ancestors() {
        if limit.is_some_and(|l| dir == l || std::fs::canonicalize(dir).is_ok_and(|d| d == l)) {
            return None;
        }
        let dotgit = dir.join(".git");
        let lmeta = match std::fs::symlink_metadata(&dotgit) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Some(unreadable(&dotgit, &e)),
        };
        return diagnose_dot_git(dir, &dotgit, &lmeta).err();
    }
    None
}

/// `Ok(())` when `dotgit` in `dir` leads to a git dir the library can read.
fn diagnose_dot_git(dir: &Path, dotgit: &Path, lmeta: &std::fs::Metadata) -> Result<(), Error> {
    let meta = if lmeta.file_type().is_symlink() {
        match std::fs::metadata(dotgit) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let target = std::fs::read_link(dotgit).unwrap_or_default();
                return Err(not_a_repository_with(
                    format!(
                        "{} is a symbolic link to {}, which does not exist",
                        dotgit.display(),
                        target.display()
                    ),
                    format!(
                        "point the link at the repository's git folder, or remove it (`rm {}`)",
                        shell_quote(&dotgit.to_string_lossy())
                    ),
                ));
            }
            Err(e) => return Err(unreadable(dotgit, &e)),
        }
    } else {
        lmeta.clone()
    };
    let git_dir = if meta.is_dir() {
        dotgit.to_path_buf()
    } else if meta.is_file() {
        let text = read_regular(dotgit).map_err(|e| unreadable(dotgit, &e))?;
        let Some(target) = text
            .strip_prefix(b"gitdir:")
            .and_then(|t| path_from_line(t.trim_ascii_start()))
        else {
            return Err(not_a_repository_with(
                format!(
                    "{} is a file that does not start with `gitdir: PATH` (git: \"invalid gitfile format\"), so it names no repository",
                    dotgit.display()
                ),
                format!(
                    "write the repository's git folder into it as `gitdir: PATH`, or move it away (`mv {0} {0}.broken`)",
                    shell_quote(&dotgit.to_string_lossy())
                ),
            ));
        };
        let target = dir.join(target);
        match std::fs::metadata(&target) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(not_a_repository_with(
                    format!(
                        "{} points to {}, which does not exist",
                        dotgit.display(),
                        target.display()
                    ),
                    format!(
                        "if the repository moved, write its git folder into {} (`gitdir: PATH`; `git worktree repair` does it for a linked worktree, run in its main working tree); if it is gone, move the file away",
                        dotgit.display()
                    ),
                ));
            }
            Err(e) => return Err(unreadable(&target, &e)),
        }
        target
    } else {
        return Err(not_a_repository_with(
            format!(
                "{} is neither a folder nor a file (a FIFO, socket or device), so it names no repository",
                dotgit.display()
            ),
            format!(
                "move it away (`mv {0} {0}.moved`) or run git delegate in another folder",
                shell_quote(&dotgit.to_string_lossy())
            ),
        ));
    };
    if let Err(e) = std::fs::read_dir(&git_dir) {
        return Err(unreadable(&git_dir, &e));
    }
    if let Some(format) = unreadable_object_format(&git_dir) {
        return Err(unsupported_object_format(&git_dir, &format));
    }
    if let Err(e) = gix::discover::is_git(&git_dir) {
        let what = if dotgit == git_dir {
            format!("{} is a folder but not a git repository", dotgit.display())
        } else {
            format!(
                "{} points to {}, which is not a git repository",
                dotgit.display(),
                git_dir.display()
            )
        };
        return Err(not_a_repository_with(
            format!("{what} ({e})"),
            format!(
                "repair or move away {}, or run git delegate in another folder",
                dotgit.display()
            ),
        ));
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
fn dubious_ownership(worktree: &Path, dotgit: &Path, git_dir: &Path) -> Option<Error> {
    use std::os::unix::fs::MetadataExt;
    let me = current_user();
    let owner = [worktree, dotgit, git_dir]
        .into_iter()
        .filter_map(|p| std::fs::symlink_metadata(p).ok().map(|m| m.uid()))
        .find(|&uid| uid != me)?;
    let shown = std::fs::canonicalize(worktree).unwrap_or_else(|_| worktree.to_path_buf());
    Some(Error::state(
        Code::DubiousOwnership,
        format!(
            "the repository at {} belongs to uid {owner}, not to you (uid {me}): git refuses to work in it (\"dubious ownership\") unless safe.directory lists it, and so does git delegate",
            shown.display()
        ),
        format!(
            "if you trust it, let git (and git delegate) in as git says: git config --global --add safe.directory {}",
            shell_quote(&shown.to_string_lossy())
        ),
    ))
}

/// The refusal of a repository whose refs are not in git's `files` format
/// (`extensions.refStorage`, such as `reftable`), which the git library
/// cannot read: without it, HEAD reads as undecodable and the refs as none.
pub fn unsupported_ref_format(repo: &gix::Repository) -> Option<Error> {
    let config = repo.config_snapshot();
    let format = config.string("extensions.refStorage")?.to_string();
    if format.eq_ignore_ascii_case("files") {
        return None;
    }
    Some(Error::state(
        Code::UnsupportedRefFormat,
        format!(
            "the repository {} keeps its refs in the `{format}` format, which the git library git delegate is built on cannot read",
            repo.common_dir().display()
        ),
        "git delegate needs git's `files` ref format: convert the repository with `git refs migrate --ref-format=files` (git 2.46 or later; it refuses while reflogs exist, which `git reflog expire --expire=all --all` deletes), or work in a clone made with `git clone --ref-format=files`",
    ))
}
