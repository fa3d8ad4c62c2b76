//! The error type the transactions return and the binary renders: a code, a
//! one-line message, a help line, an exit status (design §3), and for config
//! errors the file, line and column. Modules that raise typed errors of
//! their own (`config::ConfigError`, ...) are turned into it by
//! `ops::explain` (docs/architecture.md "Errors").
//!
//! Its files: `cause.rs` (`FsCause`: the one place where an OS error
//! becomes an error code: a full disk, a read-only filesystem, a denied
//! permission, by errno, wherever in a chain of causes it lies), `lower.rs`
//! (the trait `Explain` every typed error implements in `ops::explain`,
//! its one conversion into `Error`, and `Lower`, what a room passes on).
//!
//! Owns: how failures are classified and rendered as miette diagnostics;
//! the list of error codes (`Code`, one variant per `delegate::...` code,
//! each listed in docs/json.md).
//! Never: prints anything itself (commands and `main` do that).

use std::fmt;
use std::path::Path;

use miette::{Diagnostic, LabeledSpan, NamedSource, SourceCode, SourceSpan};

mod cause;
mod lower;

pub use self::cause::{describe, io_cause, mount_point, no_free_inodes, open_files_limit, FsCause};
pub(crate) use self::lower::lower_from;
pub use self::lower::{Explain, Lower};

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
