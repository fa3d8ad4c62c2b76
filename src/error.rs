//! The one error type of git-delegate: a code, a one-line message, a help line,
//! an exit status (SPEC §3), and for config errors the file, line and column.
//!
//! Owns: how failures are classified and rendered as miette diagnostics.
//! Never: prints anything itself (commands and `main` do that).

use std::fmt;

use miette::{Diagnostic, LabeledSpan, NamedSource, SourceCode, SourceSpan};

/// Exit statuses of SPEC §3 for failures (0 is success; 1, a reported
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
    pub code: &'static str,
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
        code: &'static str,
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

    /// Add fields to the error object of the JSON error document.
    pub fn with_details(mut self, details: serde_json::Map<String, serde_json::Value>) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    /// Bad usage or input (exit 2).
    pub fn usage(code: &'static str, message: impl Into<String>, help: impl Into<String>) -> Self {
        Self::new(Exit::Usage, code, message, help)
    }

    /// The repository's state prevents the command (exit 3).
    pub fn state(code: &'static str, message: impl Into<String>, help: impl Into<String>) -> Self {
        Self::new(Exit::State, code, message, help)
    }

    /// An I/O failure on `what` (exit 3: a filesystem error).
    pub fn io(what: impl fmt::Display, err: std::io::Error) -> Self {
        let help = match err.kind() {
            std::io::ErrorKind::PermissionDenied => "check the permissions of that path",
            _ if err.raw_os_error() == Some(28) => "free some disk space and run the command again",
            _ => "check that path and run the command again",
        };
        Self::state("delegate::io", format!("{what}: {err}"), help)
    }

    /// A failure inside gix (exit 3).
    pub fn git(what: impl fmt::Display, err: impl fmt::Display) -> Self {
        Self::state(
            "delegate::git",
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
        Some(Box::new(self.code))
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
