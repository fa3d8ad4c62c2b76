//! The error type the transactions return and the binary renders: a code, a
//! one-line message, a help line, an exit status (design §3), and for config
//! errors the file, line and column. Modules that raise typed errors of
//! their own (`config::ConfigError`, ...) are turned into it by
//! `ops::explain` (docs/architecture.md "Errors").
//!
//! Owns: how failures are classified and rendered as miette diagnostics;
//! the list of error codes (`Code`, one variant per `delegate::...` code,
//! each listed in docs/json.md); the one place where an OS error becomes an
//! error code (`FsCause`: a full disk, a read-only filesystem, a denied
//! permission, by errno, wherever in a chain of causes it lies).
//! Never: prints anything itself (commands and `main` do that).

use std::fmt;
use std::path::Path;

use miette::{Diagnostic, LabeledSpan, NamedSource, SourceCode, SourceSpan};

/// Exit statuses of design §3 for failures (0 is success; 1, a reported
/// problem, is returned by commands as `Ok(1)` with their document).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 2: bad usage or bad input, nothing changed.
    Usage = 2,
    /// 3: the repository is in a state the command cannot work in, nothing changed.
    State = 3,
}

/// A failure with everything a person (and a JSON reader) needs.
#[derive(Debug)]
pub struct Error {
    pub code: Code,
    pub message: String,
    pub help: String,
    pub exit: Exit,
    /// For config errors: the file's text and a labelled span in it (boxed,
    /// so `Result<T, Error>` stays small).
    located: Option<Box<Located>>,
    /// Fields added to the error object of the JSON error document (for
    /// `delegate::rollback_failed`: the paths left and what was kept).
    pub details: Option<Box<serde_json::Map<String, serde_json::Value>>>,
}

/// Defines [`Code`] from one list: variant and the string it is written as.
macro_rules! codes {
    ($($variant:ident => $text:literal,)*) => {
        /// Every error code (`error.code` in JSON, the diagnostic's code on
        /// stderr), one variant per code; docs/json.md "Error codes" lists
        /// each of them and no other (a unit test below checks both ways).
        /// Callers decide on the code, never on its string. The exit status
        /// is the constructor's ([`Error::usage`], [`Error::state`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code {
            $($variant,)*
        }

        impl Code {
            /// Every code, in the order of the table in docs/json.md.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The code as written in JSON and diagnostics: `delegate::...`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $text,)*
                }
            }
        }
    };
}

codes! {
    Usage => "delegate::usage",
    NotARepository => "delegate::not_a_repository",
    UnsupportedObjectFormat => "delegate::unsupported_object_format",
    UnsupportedRefFormat => "delegate::unsupported_ref_format",
    UnreadableGitDir => "delegate::unreadable_git_dir",
    DubiousOwnership => "delegate::dubious_ownership",
    UnsupportedEnvironment => "delegate::unsupported_environment",
    SourceMoved => "delegate::source_moved",
    BareRepository => "delegate::bare_repository",
    Submodules => "delegate::submodules",
    DirtySubmodule => "delegate::dirty_submodule",
    BadPattern => "delegate::bad_pattern",
    CarryExists => "delegate::carry_exists",
    NoReflink => "delegate::no_reflink",
    ScratchRefused => "delegate::scratch_refused",
    Config => "delegate::config",
    TasksFile => "delegate::tasks_file",
    BadDuration => "delegate::bad_duration",
    BadTaskName => "delegate::bad_task_name",
    DuplicateTask => "delegate::duplicate_task",
    BadLabel => "delegate::bad_label",
    DuplicateLabel => "delegate::duplicate_label",
    OwnerNotRunning => "delegate::owner_not_running",
    OrphanedLease => "delegate::orphaned_lease",
    NoBatch => "delegate::no_batch",
    AmbiguousBatch => "delegate::ambiguous_batch",
    UnknownBatch => "delegate::unknown_batch",
    UnknownTask => "delegate::unknown_task",
    TaskNotOpen => "delegate::task_not_open",
    UnknownKept => "delegate::unknown_kept",
    UnknownApply => "delegate::unknown_apply",
    AmbiguousApply => "delegate::ambiguous_apply",
    NothingToUndo => "delegate::nothing_to_undo",
    NotUndone => "delegate::not_undone",
    WorkspaceMissing => "delegate::workspace_missing",
    OnlyAndDiscard => "delegate::only_and_discard",
    NoWorkspaceRoot => "delegate::no_workspace_root",
    WorkspaceRootInsideSource => "delegate::workspace_root_inside_source",
    UnsafeWorkspaceRoot => "delegate::unsafe_workspace_root",
    WorkspaceExists => "delegate::workspace_exists",
    HookExists => "delegate::hook_exists",
    BadHookPayload => "delegate::bad_hook_payload",
    BadSettings => "delegate::bad_settings",
    NoManDir => "delegate::no_man_dir",
    BadBatchId => "delegate::bad_batch_id",
    Locked => "delegate::locked",
    BatchBusy => "delegate::batch_busy",
    CorruptBatch => "delegate::corrupt_batch",
    BaselineRefMissing => "delegate::baseline_ref_missing",
    MissingObject => "delegate::missing_object",
    UnreadableFile => "delegate::unreadable_file",
    DiskFull => "delegate::disk_full",
    TooManyOpenFiles => "delegate::too_many_open_files",
    ReadOnlyFilesystem => "delegate::read_only_filesystem",
    PermissionDenied => "delegate::permission_denied",
    FilterFailed => "delegate::filter_failed",
    CheckoutFailed => "delegate::checkout_failed",
    WriteCheckFailed => "delegate::write_check_failed",
    RefreshBlocked => "delegate::refresh_blocked",
    InvalidPath => "delegate::invalid_path",
    HeadMoved => "delegate::head_moved",
    WriteFailed => "delegate::write_failed",
    RollbackFailed => "delegate::rollback_failed",
    WritebackPending => "delegate::writeback_pending",
    Interrupted => "delegate::interrupted",
    SetupFailed => "delegate::setup_failed",
    UntrustedConfig => "delegate::untrusted_config",
    SandboxUnavailable => "delegate::sandbox_unavailable",
    IncompleteBatch => "delegate::incomplete_batch",
    UnknownRemote => "delegate::unknown_remote",
    AlreadyJoined => "delegate::already_joined",
    NotJoined => "delegate::not_joined",
    RemoteFailed => "delegate::remote_failed",
    BatchEnded => "delegate::batch_ended",
    BatchExists => "delegate::batch_exists",
    BranchExists => "delegate::branch_exists",
    BranchCheckedOut => "delegate::branch_checked_out",
    NoChanges => "delegate::no_changes",
    State => "delegate::state",
    Io => "delegate::io",
    Git => "delegate::git",
    Internal => "delegate::internal",
}

impl Code {
    /// The filesystem cause this code names, if it names one.
    pub fn fs_cause(self) -> Option<FsCause> {
        match self {
            Code::DiskFull => Some(FsCause::Full),
            Code::ReadOnlyFilesystem => Some(FsCause::ReadOnly),
            Code::PermissionDenied => Some(FsCause::Denied),
            Code::TooManyOpenFiles => Some(FsCause::OpenFiles { limit: None }),
            _ => None,
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug)]
struct Located {
    source_code: NamedSource<String>,
    span: SourceSpan,
    label: String,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(
        exit: Exit,
        code: Code,
        message: impl Into<String>,
        help: impl Into<String>,
    ) -> Self {
        Error {
            code,
            message: message.into(),
            help: help.into(),
            exit,
            located: None,
            details: None,
        }
    }

    /// A write-back that could not be rolled back: only recovery can fix
    /// the working tree (exit 3).
    pub fn is_rollback_failed(&self) -> bool {
        self.code == Code::RollbackFailed
    }

    /// A prepare interrupted by a signal (Ctrl-C): everything it made was
    /// removed again.
    pub fn interrupted() -> Error {
        Error::state(
            Code::Interrupted,
            "interrupted; everything this command made was removed again",
            "run the command again",
        )
    }

    /// Add fields to the error object of the JSON error document.
    pub fn with_details(mut self, details: serde_json::Map<String, serde_json::Value>) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    /// Bad usage or input (exit 2).
    pub fn usage(code: Code, message: impl Into<String>, help: impl Into<String>) -> Self {
        Self::new(Exit::Usage, code, message, help)
    }

    /// The repository's state prevents the command (exit 3).
    pub fn state(code: Code, message: impl Into<String>, help: impl Into<String>) -> Self {
        Self::new(Exit::State, code, message, help)
    }

    /// An I/O failure on `what` (exit 3: a filesystem error). A full disk,
    /// an exceeded quota, a read-only filesystem or a denied permission is
    /// named for what it is (see [`FsCause`]), whatever the caller was doing.
    pub fn io(what: impl fmt::Display, err: std::io::Error) -> Self {
        Self::io_on(what, None, &err)
    }

    /// Like [`Error::io`], for a failure on `path` (or on something inside
    /// it): the help names the filesystem that holds it.
    pub fn io_at(what: impl fmt::Display, path: &Path, err: std::io::Error) -> Self {
        Self::io_on(what, Some(path), &err)
    }

    /// The one place where an OS error becomes an [`Error`].
    pub fn io_on(what: impl fmt::Display, path: Option<&Path>, err: &std::io::Error) -> Self {
        if let Some(cause) = FsCause::of_at(err, path) {
            return cause.error(what, path, err);
        }
        let help = match err.kind() {
            std::io::ErrorKind::PermissionDenied => "check the permissions of that path",
            _ => "check that path and run the command again",
        };
        Self::state(Code::Io, format!("{what}: {err}"), help)
    }

    /// If an OS error of a full, read-only or forbidden filesystem lies
    /// anywhere in `err`'s causes, the error naming it; `path` is what was
    /// being written (or read).
    pub fn fs_cause(
        what: impl fmt::Display,
        path: Option<&Path>,
        err: &(dyn std::error::Error + 'static),
    ) -> Option<Self> {
        let io = io_cause(err)?;
        FsCause::of_at(io, path).map(|c| c.error(what, path, io))
    }

    /// A disk-full error met while writing under the workspace root: also
    /// say that the root can be moved to another filesystem.
    pub fn in_workspace_root(mut self) -> Self {
        if self.code == Code::DiskFull {
            self.help = format!(
                "{} (or set `workspace.root` in .git/delegate.toml to another filesystem)",
                self.help.trim_end_matches(" and run the command again")
            ) + " and run the command again";
        }
        self
    }

    /// A failure inside gix (exit 3). A full disk, read-only filesystem or
    /// denied permission inside it (writing objects or refs) is named for
    /// what it is, as for [`Error::io`].
    pub fn git(what: impl fmt::Display, err: impl fmt::Display + std::any::Any) -> Self {
        let any: &dyn std::any::Any = &err;
        let inner: Option<&(dyn std::error::Error + 'static)> = any
            .downcast_ref::<gix::Error>()
            .map(|e| e as &(dyn std::error::Error + 'static));
        if let Some(e) = inner.and_then(|e| Self::fs_cause(&what, None, e)) {
            return e;
        }
        Self::state(
            Code::Git,
            format!("{what}: {err}"),
            "check the repository with `git status` and `git fsck`, then run the command again",
        )
    }

    /// Attach the text of a file and a labelled span in it (config errors).
    pub fn with_source(
        mut self,
        name: String,
        text: String,
        span: std::ops::Range<usize>,
        label: String,
    ) -> Self {
        self.located = Some(Box::new(Located {
            source_code: NamedSource::new(name, text),
            span: SourceSpan::from(span),
            label,
        }));
        self
    }

    /// A copy with `f` applied to the message and help, when that changes
    /// them (the terminal rendering escapes unprintable characters).
    pub fn escaped(&self, f: impl Fn(&str) -> String) -> Option<Error> {
        let (message, help) = (f(&self.message), f(&self.help));
        if message == self.message && help == self.help {
            return None;
        }
        Some(Error::new(self.exit, self.code, message, help))
    }

    pub fn exit_code(&self) -> i32 {
        self.exit as i32
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl Diagnostic for Error {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.code.as_str()))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(&self.help))
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.located
            .as_ref()
            .map(|l| &l.source_code as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let l = self.located.as_ref()?;
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(
            Some(l.label.clone()),
            l.span,
        ))))
    }
}

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
    fn the_code_is_set_where_the_error_is_made_and_kept() {
        let e = Error::state(Code::RollbackFailed, "m", "h");
        assert!(e.is_rollback_failed());
        let escaped = Error::new(e.exit, e.code, "a\x1b", "h")
            .escaped(|s| s.replace('\x1b', "\\e"))
            .unwrap();
        assert!(escaped.is_rollback_failed());
        let io = std::io::Error::from_raw_os_error(rustix::io::Errno::NOSPC.raw_os_error());
        assert_eq!(Error::io("w", io).code.fs_cause(), Some(FsCause::Full));
    }

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

    /// docs/json.md "Error codes" lists every code, and every code it
    /// lists exists: the two cannot drift apart.
    #[test]
    fn docs_json_md_lists_every_error_code_and_no_other() {
        let doc = include_str!("../docs/json.md");
        let table = doc
            .split_once("\n## Error codes\n")
            .expect("docs/json.md has an \"Error codes\" section")
            .1;
        let table = table.split("\n## ").next().unwrap();
        let listed: Vec<&str> = table
            .lines()
            .filter_map(|l| l.strip_prefix("| `")?.split_once("` |"))
            .map(|(code, _)| code)
            .collect();
        let known: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        let undocumented: Vec<_> = known.iter().filter(|c| !listed.contains(c)).collect();
        let unknown: Vec<_> = listed.iter().filter(|c| !known.contains(c)).collect();
        assert!(
            undocumented.is_empty(),
            "codes missing from docs/json.md: {undocumented:?}"
        );
        assert!(
            unknown.is_empty(),
            "docs/json.md lists codes the source does not have: {unknown:?}"
        );
        let mut unique = listed.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), listed.len(), "a code is listed twice");
        assert!(known.iter().all(|c| c.starts_with("delegate::")));
    }
}
