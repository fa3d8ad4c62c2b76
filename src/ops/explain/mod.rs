//! The words at the engine's edge: every typed error of the engine's
//! modules (`config::ConfigError`, ...) turned into the one [`Error`] the
//! transactions return and the binary renders: its `Code`, exit status and
//! help line (the message is the typed error's `Display`), and for a config
//! error the file and span it points at. One `From<XError> for Error` per
//! enum, so `?` converts wherever an `Error` is returned (docs/architecture.md
//! "Errors"). This file holds the impls for the floor and `ops::lock`;
//! each layer above has a file of its own here, named for it (`git.rs`,
//! `record.rs`, `engine.rs` for `snapshot/` and `merge/`, `writeback.rs`,
//! `workspace.rs`).
//!
//! Owns: which code, exit status and help each typed error has.
//! Never: decides what failed (the module that raises the error does) or
//! prints anything; the list of codes and how an OS error is classified stay
//! in `error` (`Code`, `FsCause`, `Error::io_at`).

mod engine;

use crate::config::ConfigError;
use crate::error::{Code, Error, Explain};
use crate::ops::lock::LockError;
use crate::sys::fs::{FsError, PathError};
use crate::sys::paths::shell_quote;

mod git;
mod record;
mod workspace;
mod writeback;

/// A path as a shell word, for a command in a help line.
fn quoted(path: &std::path::Path) -> String {
    shell_quote(&path.to_string_lossy())
}

/// `delegate::config`, exit 2, pointing at the line (an unreadable file is
/// an I/O error, named by its cause as every other). The JSON error names
/// the file, line and column too (`path`, `line`, `column`). A worker can
/// write the file (design §3.18 "Commands from the shared git dir"): when
/// it differs from the copy of the file the user confirmed, the help says
/// how to compare the two and how to put the confirmed one back.
impl Explain for ConfigError {
    fn explain(self) -> Error {
        let e = self;
        const FIX: &str =
            "fix or remove that line; `man git-delegate` lists every key and its values";
        const TWICE: &str = "a table or key is given twice (appended a second time?): keep one, removing the second or moving its lines into the first; `man git-delegate` lists every key and its values";
        let message = e.to_string();
        let place = e.line_column();
        let (help, name, text, span, label) = match e {
            ConfigError::Unreadable { source, .. } => return Error::io(message, source),
            ConfigError::NotText {
                path, shown, span, ..
            } => (
                "fix or remove that line (`man git-delegate` lists every key and its values), or remove the file",
                path,
                shown,
                span,
                "here",
            ),
            ConfigError::Toml {
                path, text, source, ..
            } => {
                let span = source.span().unwrap_or(0..0);
                let help = match source.message().contains("duplicate key") {
                    true => TWICE,
                    false => FIX,
                };
                (help, path, text, span, "here")
            }
            ConfigError::Value {
                path,
                text,
                span,
                label,
                ..
            } => (FIX, path, text, span, label),
        };
        let mut help = help.to_string();
        if let Some(copy) = crate::config::differing_copy(&name) {
            help.push_str(&format!(
                "; the file differs from the one you confirmed (a worker's workspace shares it): `git diff --no-index {} {}` shows how, `cp {} {}` puts yours back",
                quoted(&copy),
                quoted(&name),
                quoted(&copy),
                quoted(&name)
            ));
        }
        let mut details = serde_json::Map::new();
        details.insert("path".into(), name.display().to_string().into());
        if let Some((line, column)) = place {
            details.insert("line".into(), line.into());
            details.insert("column".into(), column.into());
        }
        Error::usage(Code::Config, message, help)
            .with_source(name.display().to_string(), text, span, label.to_string())
            .with_details(details)
    }
}

/// The repository lock: `delegate::locked` when another command holds it,
/// an I/O error (named by its cause) when its file cannot be had.
impl Explain for LockError {
    fn explain(self) -> Error {
        let e = self;
        let message = e.to_string();
        match e {
            LockError::Io(e) => e.into(),
            LockError::Held { .. } => Error::state(
                Code::Locked,
                message,
                "wait for it to finish, or raise `lock.timeout` in .git/delegate.toml",
            ),
            LockError::Interrupted => Error::interrupted(),
        }
    }
}

/// The filesystem helpers' failures: I/O errors, a full disk, a read-only
/// filesystem or a denied permission named for what it is (for a write,
/// with the filesystem that holds its folder).
impl Explain for FsError {
    fn explain(self) -> Error {
        let e = self;
        match e {
            FsError::Write { dir, io } => Error::io_at(io.to_string(), &dir, io.source),
            FsError::Path(e) => e.into(),
        }
    }
}

/// A path's I/O error: named by its cause (a full disk, a read-only
/// filesystem or a denied permission for what it is).
impl Explain for PathError {
    fn explain(self) -> Error {
        let e = self;
        Error::io(e.to_string(), e.source)
    }
}

#[cfg(test)]
mod tests;
