//! The errors of a write-back that failed (`WriteError`): a write that
//! changed nothing, or was rolled back whole, with the cause that decides
//! its code (a full disk, a filter); the check before writing that could
//! not read the disk; an interrupt rolled back on a signal; a rollback that
//! left paths to the user, with the journal and what was kept for each.
//! Their `Display` is the message; `ops::explain` words the rest (code,
//! help, the JSON details of `delegate::rollback_failed`).
//! Never: reads the disk (but whether a journal is still there, when a
//! rollback failed) or decides a code from an error's message text.

use std::path::{Path, PathBuf};

use gix::bstr::{BStr, BString, ByteSlice};

use crate::error::FsCause;

/// Why a write-back failed, where that decides the error code. Carried as
/// data from where it happened, never read back out of a message (a
/// path's name may hold any text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// A full, read-only or forbidden filesystem (`FsCause`).
    Fs(FsCause),
    /// A `required` clean or smudge filter driver failed: the driver's
    /// name (`filter.<name>`) when it is known, for the help.
    Filter(Option<String>),
    /// A signal (Ctrl-C, SIGTERM, SIGHUP) arrived before the commit point:
    /// rolled back on request, `delegate::interrupted` (design §7 "Signals").
    Interrupted,
}

/// A write-back that failed, or the check before it. `what` is the step
/// that failed with its OS or filter error in words (`cannot stat a: ...`).
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The working tree to write into cannot be opened: nothing changed.
    #[error("cannot open the working tree {}: {source}", root.display())]
    OpenRoot {
        root: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Planning the write (reading the disk) failed: nothing changed.
    /// `root` is the working tree's (its filesystem is named in the help).
    #[error("write-back stopped before any change: {what}")]
    Plan {
        root: PathBuf,
        what: String,
        cause: Option<Cause>,
    },
    /// The journal cannot be recorded: nothing changed. `cause` is decided
    /// where it failed (a full disk without free inodes is `NoInodes`).
    #[error("cannot record the write-back journal {}: {source}; nothing was changed", path.display())]
    Journal {
        path: PathBuf,
        cause: Option<FsCause>,
        #[source]
        source: std::io::Error,
    },
    /// Writing failed, and every path was rolled back.
    #[error("write-back failed: {what}; every path was rolled back to what it was before")]
    Write {
        root: PathBuf,
        what: String,
        cause: Option<Cause>,
    },
    /// `check` could not read what it tests against.
    #[error("cannot check the working tree before writing: {what}")]
    Check {
        root: PathBuf,
        what: String,
        cause: Option<Cause>,
    },
    /// A signal stopped the write-back into `root`, which was rolled back.
    #[error("interrupted by a signal during the write-back into {}: it was rolled back, so every path there is as it was before", root.display())]
    Interrupted { root: PathBuf },
    /// A rollback (or a roll-forward) that left paths as it found them.
    #[error("{0}")]
    RollbackFailed(Box<RollbackFailed>),
}

/// What a rollback that left paths to the user found: where, which paths
/// (each with the file kept for it), and whether the journal stays.
#[derive(Debug)]
pub struct RollbackFailed {
    /// The working tree's root.
    pub root: PathBuf,
    pub journal: PathBuf,
    /// The journal is still there (while a kept file is).
    pub journal_kept: bool,
    pub during: Undoing,
    pub left: Vec<Left>,
}

/// What was being undone (or finished) when paths were left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undoing {
    /// The rollback of a write-back that failed (`what`: why).
    Write { what: String },
    /// Recovery of a journal left by a dead process: finishing one past
    /// its commit point (`committed`), or rolling one back.
    Recovery { committed: bool },
}

/// Why a path was not put back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeftReason {
    /// The path no longer holds what write-back put there: the user
    /// changed, replaced or removed it since. Left as the user left it.
    ChangedSinceWritten,
    /// Something new stands where the original must come back (where
    /// write-back had removed a file, or in a folder it had created).
    InTheWay,
    /// A filesystem error (permissions, I/O) stopped that step.
    Error,
}

impl LeftReason {
    pub fn as_str(self) -> &'static str {
        match self {
            LeftReason::ChangedSinceWritten => "changed_since_written",
            LeftReason::InTheWay => "in_the_way",
            LeftReason::Error => "error",
        }
    }
}

/// A path rollback (or roll-forward) left as it found it (design §7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Left {
    /// The path, relative to the working tree's root.
    pub path: BString,
    pub reason: LeftReason,
    /// A file kept instead of being moved back or deleted (relative to
    /// the root): the original the write had moved aside, or (`yours`) the
    /// user's version of the path, under the write's temp name.
    pub kept: Option<BString>,
    /// `kept` is the user's version (found under the write's temp name).
    pub yours: bool,
    /// What happened, for people.
    pub detail: String,
}

impl WriteError {
    /// The rollback of `journal`'s write-back into `root` left `left`.
    pub(super) fn rollback_failed(
        root: &Path,
        journal: &Path,
        during: Undoing,
        left: Vec<Left>,
    ) -> WriteError {
        WriteError::RollbackFailed(Box::new(RollbackFailed {
            root: root.to_path_buf(),
            journal: journal.to_path_buf(),
            journal_kept: journal.exists(),
            during,
            left,
        }))
    }
}

impl RollbackFailed {
    /// The file kept for `l`, absolute.
    pub fn kept(&self, l: &Left) -> Option<PathBuf> {
        l.kept
            .as_ref()
            .map(|k| self.root.join(crate::sys::paths::to_os(k.as_bstr())))
    }
}

/// `delegate::rollback_failed`'s message: each path left with its kept file.
impl std::fmt::Display for RollbackFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = self;
        let named: Vec<String> = r
            .left
            .iter()
            .map(|l| {
                let mut s = if l.path.is_empty() {
                    l.detail.clone()
                } else {
                    format!(
                        "{}: {}",
                        crate::sys::paths::quote(l.path.as_bstr()),
                        l.detail
                    )
                };
                if let Some(k) = r.kept(l) {
                    let whose = if l.yours {
                        "your version"
                    } else {
                        "the original"
                    };
                    s.push_str(&format!(", {whose} is kept at {}", k.display()));
                }
                s
            })
            .collect();
        let what = match &r.during {
            Undoing::Write { what } => format!("write-back failed ({what})"),
            Undoing::Recovery { committed: true } => "finishing an interrupted write-back".into(),
            Undoing::Recovery { committed: false } => {
                "rolling back an interrupted write-back".into()
            }
        };
        write!(
            f,
            "{what}: {} left as found ({}); {}",
            if r.left.len() == 1 {
                "1 path was".to_string()
            } else {
                format!("{} paths were", r.left.len())
            },
            named.join("; "),
            if r.journal_kept {
                format!(
                    "the journal {} is kept until that is resolved",
                    r.journal.display()
                )
            } else {
                "every other path was put back".to_string()
            }
        )
    }
}

/// Why a step of a write-back (or of the check before it) failed, as data:
/// turned into a [`WriteError`] where the write-back gives up (its
/// `Display` the `what`, [`Failure::cause`] the cause). The cause is carried
/// from where it happened, never read back out of the words (a path's name
/// may hold any text).
#[derive(Debug)]
pub(super) enum Failure {
    /// `op` on `path` (relative to the root; empty: the working tree) failed
    /// with an OS error, whose errno decides the cause.
    Io {
        op: &'static str,
        path: BString,
        source: std::io::Error,
    },
    /// A step that failed because of another error: `what` says both; the
    /// cause is an OS error of a known cause in that error's chain.
    Because { what: String, cause: Option<Cause> },
    /// A path that is not as the write-back needs it (`why`), of no
    /// particular cause (`write_failed`).
    Path { path: BString, why: PathProblem },
    /// A failure of no particular cause (`write_failed`).
    Other(String),
    /// A failing filter driver (`driver`: its name, when known).
    Filter {
        what: String,
        driver: Option<String>,
    },
    /// A signal arrived (design §7 "Signals").
    Interrupted,
    /// A full disk below the working tree whose filesystem has no free
    /// inodes left (`inodes`: `FsCause::inodes_text`), decided where it
    /// happened ([`Failure::at`]).
    NoInodes {
        failure: Box<Failure>,
        inodes: String,
    },
}

/// What is wrong with a path a write-back meets (its words follow the
/// quoted path, but for `Vanished`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PathProblem {
    /// It no longer holds what the snapshot read.
    Changed,
    /// Something that is no folder stands where the result needs one.
    InTheWay,
    /// A folder the write-back uses went away.
    Vanished,
    /// A new entry in a folder the result replaces by a file.
    Appeared,
    /// A folder or submodule entry, which no caller plans.
    NotAFile,
    /// No relative path (empty, or with an empty, `.` or `..` component).
    Invalid,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Io { op, path, source } => {
                let path = if path.is_empty() {
                    "the working tree".to_string()
                } else {
                    crate::sys::paths::quote(path.as_bstr())
                };
                write!(f, "cannot {op} {path}: {}", crate::error::describe(source))
            }
            Failure::Because { what, .. } | Failure::Other(what) | Failure::Filter { what, .. } => {
                f.write_str(what)
            }
            Failure::Path { path, why } => {
                let path = crate::sys::paths::quote(path.as_bstr());
                match why {
                    PathProblem::Changed => write!(f, "{path} changed on disk since the snapshot"),
                    PathProblem::InTheWay => {
                        write!(f, "{path} is in the way of a folder the result needs")
                    }
                    PathProblem::Vanished => {
                        write!(f, "the folder {path} disappeared during the write-back")
                    }
                    PathProblem::Appeared => {
                        write!(
                            f,
                            "{path} appeared in a folder the result replaces by a file"
                        )
                    }
                    PathProblem::NotAFile => write!(
                        f,
                        "{path} is a folder or submodule entry, which write-back does not handle"
                    ),
                    PathProblem::Invalid => write!(f, "{path} is not a valid path"),
                }
            }
            Failure::Interrupted => f.write_str("interrupted by a signal"),
            Failure::NoInodes { failure, inodes } => write!(f, "{failure}: {inodes}"),
        }
    }
}

impl Failure {
    /// What decides the error code, if anything does.
    pub(super) fn cause(&self) -> Option<Cause> {
        match self {
            Failure::Io { source, .. } => FsCause::of(source).map(Cause::Fs),
            Failure::Because { cause, .. } => cause.clone(),
            Failure::Path { .. } | Failure::Other(_) => None,
            Failure::Filter { driver, .. } => Some(Cause::Filter(driver.clone())),
            Failure::Interrupted => Some(Cause::Interrupted),
            Failure::NoInodes { .. } => Some(Cause::Fs(FsCause::NoInodes)),
        }
    }

    /// A failure of no particular cause (`write_failed`).
    pub(super) fn msg(message: impl Into<String>) -> Failure {
        Failure::Other(message.into())
    }

    /// A failure because of `err`: an OS error of a known cause anywhere
    /// in its chain of causes decides the code.
    pub(super) fn because(
        message: impl Into<String>,
        err: &(dyn std::error::Error + 'static),
    ) -> Failure {
        let cause = crate::error::io_cause(err)
            .and_then(FsCause::of)
            .map(Cause::Fs);
        Failure::Because {
            what: message.into(),
            cause,
        }
    }

    /// This failure, met writing below `root`: a full disk whose inodes
    /// ran out is named so (design §3.18 "Leftovers"), decided now, before
    /// a rollback gives inodes back.
    pub(super) fn at(self, root: &Path) -> Failure {
        match self.cause() {
            Some(Cause::Fs(FsCause::Full)) if FsCause::Full.at(root) == FsCause::NoInodes => {
                Failure::NoInodes {
                    failure: Box::new(self),
                    inodes: FsCause::inodes_text(root),
                }
            }
            _ => self,
        }
    }

    /// Stop here if a signal arrived (design §7 "Signals"): the write-back
    /// is rolled back before the command exits.
    pub(super) fn if_interrupted() -> Result<(), Failure> {
        match crate::sys::interrupt::interrupted() {
            true => Err(Failure::Interrupted),
            false => Ok(()),
        }
    }

    /// A failing filter driver (`driver`: its name, when known).
    pub(super) fn filter(message: impl Into<String>, driver: Option<String>) -> Failure {
        Failure::Filter {
            what: message.into(),
            driver,
        }
    }

    /// `path` is not as the write-back needs it.
    pub(super) fn path(path: &BStr, why: PathProblem) -> Failure {
        Failure::Path {
            path: path.to_owned(),
            why,
        }
    }

    /// `op` on `path` failed with `e`.
    pub(super) fn io(op: &'static str, path: &BStr, e: impl Into<std::io::Error>) -> Failure {
        Failure::Io {
            op,
            path: path.to_owned(),
            source: e.into(),
        }
    }
}
