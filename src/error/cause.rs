//! What an OS error says about the filesystem (`FsCause`): the one place
//! where an OS error becomes an error code (a full disk, no free inodes, a
//! read-only filesystem, a denied permission, too many open files), by
//! errno, wherever in a chain of causes it lies; an OS error in words
//! (`describe`); the mount point a help line names.
//!
//! Owns: classifying OS errors and the words of those causes.
//! Never: prints anything, or decides a code from an error's message text.

use std::fmt;
use std::path::Path;

use super::{Code, Error};

/// What an OS error says about the filesystem when it, not the file, is the
/// cause: the message names it and the help says what to do, for every
/// command alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsCause {
    /// ENOSPC or EDQUOT: no space (or no quota) left.
    Full,
    /// ENOSPC on a filesystem whose inodes ran out while it still has free
    /// blocks (design §3.18 "Leftovers"): removing files helps there,
    /// freeing space may not. Decided where the error happens
    /// ([`FsCause::of_at`], [`FsCause::at`]): what a rollback removes after
    /// it gives inodes back.
    NoInodes,
    /// EROFS: the filesystem is mounted read-only.
    ReadOnly,
    /// EACCES or EPERM: the user may not do that there.
    Denied,
    /// EMFILE: this process has as many files open as its limit allows
    /// (`ulimit -n`: the soft limit, read when the error was met), or,
    /// `limit` `None`, ENFILE: the whole system has (`fs.file-max`). Not
    /// the path's fault, nor the filesystem's: said as that, never as an
    /// unreadable file or a workspace that is not ours.
    OpenFiles { limit: Option<u64> },
}

impl FsCause {
    pub fn of(err: &std::io::Error) -> Option<FsCause> {
        use rustix::io::Errno;
        use std::io::ErrorKind;
        let Some(n) = err.raw_os_error() else {
            // An OS error wrapped with its path (tempfile does that) keeps its kind.
            return match err.kind() {
                ErrorKind::StorageFull | ErrorKind::QuotaExceeded => Some(FsCause::Full),
                ErrorKind::ReadOnlyFilesystem => Some(FsCause::ReadOnly),
                _ => None,
            };
        };
        if n == Errno::NOSPC.raw_os_error() || n == Errno::DQUOT.raw_os_error() {
            Some(FsCause::Full)
        } else if n == Errno::MFILE.raw_os_error() {
            Some(FsCause::OpenFiles {
                limit: open_files_limit().map(|(soft, _)| soft),
            })
        } else if n == Errno::NFILE.raw_os_error() {
            Some(FsCause::OpenFiles { limit: None })
        } else if n == Errno::ROFS.raw_os_error() {
            Some(FsCause::ReadOnly)
        } else if n == Errno::ACCESS.raw_os_error() || n == Errno::PERM.raw_os_error() {
            Some(FsCause::Denied)
        } else {
            None
        }
    }

    /// [`FsCause::of`] for a failure on `path` (or on something inside
    /// it): ENOSPC where its filesystem has no free inodes is `NoInodes`.
    pub fn of_at(err: &std::io::Error, path: Option<&Path>) -> Option<FsCause> {
        let cause = FsCause::of(err)?;
        Some(match path {
            Some(p) if is_enospc(err) => cause.at(p),
            _ => cause,
        })
    }

    /// This cause, met on `path`: a full disk whose filesystem has no free
    /// inodes but free blocks is `NoInodes`. (An EDQUOT is `Full` too, and
    /// may become `NoInodes` only while the inodes are what ran out.)
    pub fn at(self, path: &Path) -> FsCause {
        match self {
            FsCause::Full if no_free_inodes(path) => FsCause::NoInodes,
            other => other,
        }
    }

    /// The error code (design §6.2 `error.code`).
    pub fn code(self) -> Code {
        match self {
            FsCause::Full | FsCause::NoInodes => Code::DiskFull,
            FsCause::ReadOnly => Code::ReadOnlyFilesystem,
            FsCause::Denied => Code::PermissionDenied,
            FsCause::OpenFiles { .. } => Code::TooManyOpenFiles,
        }
    }

    /// The error naming this cause; `what` failed on `path` with `err`.
    pub fn error(
        self,
        what: impl fmt::Display,
        path: Option<&Path>,
        err: &std::io::Error,
    ) -> Error {
        let text = describe(err);
        let text = match (self, path) {
            (FsCause::NoInodes, Some(p)) => {
                let inodes = FsCause::inodes_text(p);
                match text.strip_prefix("no space left on device") {
                    Some(rest) => format!("{inodes}{rest}"),
                    None => format!("{inodes}: {text}"),
                }
            }
            _ => text,
        };
        Error::state(self.code(), format!("{what}: {text}"), self.help(path))
    }

    /// "no free inodes on the filesystem mounted at M", for `path` there.
    pub fn inodes_text(path: &Path) -> String {
        format!(
            "no free inodes on the filesystem mounted at {}",
            mount_point(path).display()
        )
    }

    /// What to do about it; `path` is what was being written.
    pub fn help(self, path: Option<&Path>) -> String {
        let fs = path
            .map(|p| format!("the filesystem mounted at {}", mount_point(p).display()))
            .unwrap_or_else(|| "the filesystem that holds it".into());
        match self {
            FsCause::NoInodes => format!(
                "free inodes on {fs}: remove files or folders you do not need there (each takes one; `df -i{}` shows how many are left) and run the command again",
                path.map(|p| format!(" {}", crate::sys::paths::shell_quote(&mount_point(p).to_string_lossy())))
                    .unwrap_or_default()
            ),
            FsCause::Full => format!("free space on {fs} and run the command again"),
            FsCause::ReadOnly => format!("remount {fs} read-write and run the command again"),
            FsCause::Denied => match path {
                Some(p) => format!(
                    "check the permissions of {} and the folders above it (root too is refused by an immutable `chattr +i` folder), then run the command again",
                    p.display()
                ),
                None => "check the permissions of that path and the folders above it, then run the command again".into(),
            },
            FsCause::OpenFiles { limit: Some(soft) } => match open_files_limit() {
                // Up to 4096, or the hard limit where that is lower.
                Some((_, hard)) if hard > soft => format!(
                    "raise the limit of open files in the shell that runs git-delegate (`ulimit -n {}`) and run the command again",
                    hard.min(4096.max(soft))
                ),
                _ => format!("{soft} open files is also this process's hard limit, which only root can raise (`ulimit -Hn`, limits.conf, systemd's LimitNOFILE): raise it, then run the command again"),
            },
            FsCause::OpenFiles { limit: None } => "the system's limit of open files is reached (`sysctl fs.file-max`): close programs that hold many files open, or raise it as root, and run the command again".into(),
        }
    }
}

/// Is `err` ENOSPC (not EDQUOT), by errno or by kind?
fn is_enospc(err: &std::io::Error) -> bool {
    match err.raw_os_error() {
        Some(n) => n == rustix::io::Errno::NOSPC.raw_os_error(),
        None => err.kind() == std::io::ErrorKind::StorageFull,
    }
}

/// Has the filesystem holding `path` (or its nearest existing ancestor)
/// run out of inodes while it still has free blocks? A filesystem that
/// does not count inodes (`f_files` 0, as btrfs) never has.
pub fn no_free_inodes(path: &Path) -> bool {
    path.ancestors()
        .find_map(|p| rustix::fs::statvfs(p).ok())
        .is_some_and(|v| v.f_files > 0 && (v.f_favail == 0 || v.f_ffree == 0) && v.f_bavail > 0)
}

/// An OS error as a person reads it, with the errno's name for the causes
/// [`FsCause`] knows: "no space left on device (ENOSPC, os error 28)".
pub fn describe(err: &std::io::Error) -> String {
    let mut text = err.to_string();
    if let Some(c) = text.get(..1) {
        text = c.to_lowercase() + &text[1..];
    }
    use rustix::io::Errno;
    use std::io::ErrorKind;
    // The error's own errno (an error wrapped with its path keeps its kind),
    // named once where the OS error's text is: never in a path further on.
    let n = err.raw_os_error().or_else(|| match err.kind() {
        ErrorKind::StorageFull => Some(Errno::NOSPC.raw_os_error()),
        ErrorKind::QuotaExceeded => Some(Errno::DQUOT.raw_os_error()),
        ErrorKind::ReadOnlyFilesystem => Some(Errno::ROFS.raw_os_error()),
        _ => None,
    });
    let Some(n) = n else { return text };
    let name = [
        (Errno::NOSPC, "ENOSPC"),
        (Errno::DQUOT, "EDQUOT"),
        (Errno::ROFS, "EROFS"),
        (Errno::ACCESS, "EACCES"),
        (Errno::PERM, "EPERM"),
        (Errno::MFILE, "EMFILE"),
        (Errno::NFILE, "ENFILE"),
    ]
    .into_iter()
    .find(|(e, _)| e.raw_os_error() == n)
    .map(|(_, name)| name);
    let text = match name {
        Some(name) => text.replacen(
            &format!("(os error {n})"),
            &format!("({name}, os error {n})"),
            1,
        ),
        None => text,
    };
    // Too many open files: the limit that was reached, named.
    match FsCause::of(err) {
        Some(FsCause::OpenFiles { limit: Some(l) }) => {
            format!("{text}: this process may have at most {l} files open (`ulimit -n`)")
        }
        Some(FsCause::OpenFiles { limit: None }) => {
            format!("{text}: the system's limit of open files is reached (`sysctl fs.file-max`)")
        }
        _ => text,
    }
}

/// This process's limits of open files (`RLIMIT_NOFILE`): the soft one,
/// which EMFILE means was reached, and the hard one it may be raised to
/// (`u64::MAX`: unlimited).
pub fn open_files_limit() -> Option<(u64, u64)> {
    let l = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    Some((l.current?, l.maximum.unwrap_or(u64::MAX)))
}

/// The first OS error among `err` and its causes (gix's error trees
/// included), else the first I/O error.
pub fn io_cause<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a std::io::Error> {
    let mut found: Option<&std::io::Error> = None;
    let mut visit = |e: &'a (dyn std::error::Error + 'static)| -> bool {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if io.raw_os_error().is_some() || FsCause::of(io).is_some() {
                found = Some(io);
                return true;
            }
            found.get_or_insert(io);
        }
        false
    };
    let mut cur = Some(err);
    while let Some(e) = cur {
        if visit(e) {
            return found;
        }
        if let Some(g) = e.downcast_ref::<gix::Error>() {
            for inner in g.iter_errors() {
                if visit(inner) {
                    return found;
                }
                // An io::Error that wraps another error (gix does that).
                if let Some(io) = inner.downcast_ref::<std::io::Error>() {
                    if let Some(deeper) = io.get_ref() {
                        if let Some(d) = io_cause(deeper) {
                            if d.raw_os_error().is_some() {
                                return Some(d);
                            }
                        }
                    }
                }
            }
        }
        cur = e.source();
    }
    found
}

/// The mount point of the filesystem holding `path` (or its nearest
/// existing ancestor): the highest ancestor on the same device.
pub fn mount_point(path: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::MetadataExt;
    let Some((start, dev)) = path
        .ancestors()
        .find_map(|p| std::fs::metadata(p).ok().map(|m| (p, m.dev())))
    else {
        return path.to_path_buf();
    };
    let mut top = start;
    for p in start.ancestors().skip(1) {
        match std::fs::metadata(p) {
            Ok(m) if m.dev() == dev => top = p,
            _ => break,
        }
    }
    top.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_errors_are_named_for_their_cause() {
        let err = |n: i32| std::io::Error::from_raw_os_error(n);
        use rustix::io::Errno;
        for (n, code) in [
            (Errno::NOSPC, Code::DiskFull),
            (Errno::DQUOT, Code::DiskFull),
            (Errno::ROFS, Code::ReadOnlyFilesystem),
            (Errno::ACCESS, Code::PermissionDenied),
            (Errno::PERM, Code::PermissionDenied),
            (Errno::NOENT, Code::Io),
        ] {
            let e = Error::io("cannot write x", err(n.raw_os_error()));
            assert_eq!(e.code, code, "{}", e.message);
            assert_eq!(e.exit_code(), 3);
        }
        let e = Error::io_at("cannot write /", Path::new("/"), err(28));
        assert_eq!(
            e.message,
            "cannot write /: no space left on device (ENOSPC, os error 28)"
        );
        assert_eq!(
            e.help,
            "free space on the filesystem mounted at / and run the command again"
        );
        let e = e.in_workspace_root();
        assert!(e.help.contains("workspace.root"), "{}", e.help);
        assert!(e.help.ends_with(" and run the command again"), "{}", e.help);
    }

    /// Only the error's own errno is named, once: a path inside the text
    /// that holds "(os error 13)" is shown as it is.
    #[test]
    fn describe_names_the_errors_own_errno_and_leaves_paths_alone() {
        use std::io::ErrorKind::{NotFound, StorageFull};
        for (kind, text, said) in [
            (
                NotFound,
                "No such file or directory (os error 2) at path /a (os error 13)/b",
                "no such file or directory (os error 2) at path /a (os error 13)/b",
            ),
            (
                StorageFull,
                "No space left on device (os error 28) at path /x (os error 28)",
                "no space left on device (ENOSPC, os error 28) at path /x (os error 28)",
            ),
        ] {
            assert_eq!(describe(&std::io::Error::new(kind, text)), said, "{text}");
        }
        assert_eq!(
            describe(&std::io::Error::from_raw_os_error(30)),
            "read-only file system (EROFS, os error 30)"
        );
    }

    #[test]
    fn a_cause_is_found_in_wrapped_errors() {
        let wrapped =
            std::io::Error::new(std::io::ErrorKind::StorageFull, "no space left at path x");
        assert_eq!(FsCause::of(&wrapped), Some(FsCause::Full));
        let g = gix::Error::from_error(std::io::Error::from_raw_os_error(30));
        let e = Error::fs_cause("cannot store", None, &g).unwrap();
        assert_eq!(e.code, Code::ReadOnlyFilesystem);
    }
}
